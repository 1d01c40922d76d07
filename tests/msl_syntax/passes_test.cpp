// The passes both lowerings run: vector constructors and casts, the
// cast-context test, OpenCL-only keywords, integer constant expressions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mfagen/msl/cast_context.h"
#include "mfagen/msl/constexpr_constants.h"
#include "mfagen/msl/integer_expression.h"
#include "mfagen/msl/opencl_keywords.h"
#include "mfagen/msl/token_view.h"
#include "mfagen/msl/vector_syntax.h"

using namespace mfagen::msl;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

struct Problem {
  VectorSyntaxProblem problem;
  std::string token;
  std::string message;
};

struct VectorLowering {
  std::string text;
  std::vector<Problem> problems;
};

VectorLowering lower_vectors(std::string_view source) {
  TokenView v(source);
  VectorLowering out;
  lower_vector_syntax(v, [&](VectorSyntaxProblem problem, size_t k, const std::string& message) {
    out.problems.push_back({problem, std::string(v.text(k)), message});
  });
  out.text = v.joined();
  return out;
}

TEST(VectorSyntax, ConstructorsAndCastsTakeTheConvertingHelpers) {
  auto out = lower_vectors("void f(int4 i, float2 h) { float4 a = float4(i); float4 b = float4(h, 1.0f, 2.0f);\n"
                           "  int4 c = (int4)a; float x = sizeof(float4); float4 d = a * (float4)c;\n"
                           "  return (half2)h; auto m = metal::float2(1); }\n");
  EXPECT_THAT(out.text, HasSubstr("::metal::__mf_vec_ctor<float4>(i)"));
  EXPECT_THAT(out.text, HasSubstr("::metal::__mf_vec_ctor<float4>(h, 1.0f, 2.0f)"));
  EXPECT_THAT(out.text, HasSubstr("int4 c = ::metal::__mf_vec_cast<int4>{} ->*a"));
  EXPECT_THAT(out.text, HasSubstr("sizeof(float4)"));
  EXPECT_THAT(out.text, HasSubstr("a * ::metal::__mf_vec_cast<float4>{} ->*c"));
  EXPECT_THAT(out.text, HasSubstr("return ::metal::__mf_vec_cast<half2>{} ->*h"));
  EXPECT_THAT(out.text, HasSubstr("metal::__mf_vec_ctor<::metal::float2>(1)"));
  EXPECT_THAT(out.text, HasSubstr("void f(int4 i, float2 h)")) << "a parameter list is no cast";
  EXPECT_TRUE(out.problems.empty());
}

TEST(VectorSyntax, TemplateSpelledVectorsToo) {
  auto out = lower_vectors("void f(int4 i) { vec<float, 4> a = vec<float, 4>(i); auto b = (vec<int, 4>)a;\n"
                           "  auto c = metal::vec<half, 2>(1.0h); }\n");
  EXPECT_THAT(out.text, HasSubstr("a = ::metal::__mf_vec_ctor<::metal::vec<float, 4>>(i)"));
  EXPECT_THAT(out.text, HasSubstr("b = ::metal::__mf_vec_cast<::metal::vec<int, 4>>{} ->*a"));
  EXPECT_THAT(out.text, HasSubstr("c = metal::__mf_vec_ctor<::metal::vec<half, 2>>(1.0h)"));
  EXPECT_THAT(out.text, HasSubstr("void f(int4 i) { vec<float, 4> a"));
}

TEST(VectorSyntax, DirectInitializedVariablesTakeTheConstructor) {
  // metal-flash-attention v1: `ushort2 origin(n, m);`, an alias too.
  auto out = lower_vectors("using idx2 = ushort2;\n"
                           "void f(ushort n, ushort m) { ushort2 origin(n, m); const uint3 s(n % 2, min(n, m), 1);\n"
                           "  idx2 t(n, 0); float4 v = float4(1); }\n"
                           "float2 g(float x);\nfloat2 h(const float x) { return x; }\nhalf2 k();\n"
                           "float4 p(float, device int*);\nuint2 q(half2);\n"
                           "typedef float float2_like __attribute__((aligned(8)));\n");
  EXPECT_THAT(out.text, HasSubstr("ushort2 origin= ::metal::__mf_vec_ctor<ushort2>(n, m);"));
  EXPECT_THAT(out.text, HasSubstr("uint3 s= ::metal::__mf_vec_ctor<uint3>(n % 2, min(n, m), 1);"));
  EXPECT_THAT(out.text, HasSubstr("idx2 t= ::metal::__mf_vec_ctor<idx2>(n, 0);"));
  EXPECT_THAT(out.text, HasSubstr("float2 g(float x);")) << "a function declarator";
  EXPECT_THAT(out.text, HasSubstr("float2 h(const float x) {"));
  EXPECT_THAT(out.text, HasSubstr("half2 k();"));
  EXPECT_THAT(out.text, HasSubstr("float4 p(float, device int*);")) << "unnamed parameters";
  EXPECT_THAT(out.text, HasSubstr("uint2 q(half2);"));
  EXPECT_TRUE(out.problems.empty());
}

TEST(VectorSyntax, AttributesAndMembersStay) {
  auto out = lower_vectors("struct S { operator float4() const; }; void f(S s [[user(float4(1))]]) {\n"
                           "  s.float4(1); p->float2(2); }\n");
  EXPECT_THAT(out.text, Not(HasSubstr("__mf_vec")));
}

TEST(VectorSyntax, WhatTheRewriteCannotExpressIsReportedAndLeftAsWritten) {
  auto out = lower_vectors("void f(int4 i) { float4 a = -(float4)i; float4 b = x - (float4)i;\n"
                           "  auto c = ns::float4(1); bool d = vec < 3; }\n");
  ASSERT_EQ(out.problems.size(), 3u);
  EXPECT_EQ(out.problems[0].problem, VectorSyntaxProblem::unary_operator_before_cast);
  EXPECT_EQ(out.problems[0].token, "(");
  EXPECT_EQ(out.problems[0].message, "write '-T(...)' instead of a unary operator before a C-style vector cast");
  EXPECT_THAT(out.text, HasSubstr("a = -(float4)i;"));
  EXPECT_THAT(out.text, HasSubstr("b = x - ::metal::__mf_vec_cast<float4>{} ->*i;")) << "a binary minus";
  EXPECT_EQ(out.problems[1].problem, VectorSyntaxProblem::qualified_constructor);
  EXPECT_EQ(out.problems[1].token, "float4");
  EXPECT_THAT(out.text, HasSubstr("ns::float4(1)"));
  EXPECT_EQ(out.problems[2].problem, VectorSyntaxProblem::unbalanced_template_arguments);
  EXPECT_EQ(out.problems[2].message, "unbalanced '<'");
  EXPECT_THAT(out.text, HasSubstr("vec < 3;"));
}

TEST(VectorSyntax, VectorTypeNames) {
  for (const char* name : {"float2", "half4", "bfloat3", "bool2", "uchar4", "ulong3"})
    EXPECT_TRUE(is_vector_type_name(name)) << name;
  for (const char* name : {"float", "float5", "float1", "double2", "vec", "float8"})
    EXPECT_FALSE(is_vector_type_name(name)) << name;
}

TEST(CastContext, TellsCastsFromSizeofCallsAndDeclarations) {
  auto context = [](std::string_view source) {
    TokenView v(source);
    size_t open = 0;
    while (!(v.is(open, "(") && v.is(open + 1, "T"))) ++open;
    return cast_context(v, open, open + 3);
  };
  EXPECT_EQ(context("a = (T)b;"), CastContext::cast);
  EXPECT_EQ(context("return (T)b;"), CastContext::cast);
  EXPECT_EQ(context("x = y * (T)b;"), CastContext::cast);
  EXPECT_EQ(context("n = sizeof(T);"), CastContext::not_a_cast);
  EXPECT_EQ(context("f(T) {}"), CastContext::not_a_cast);
  EXPECT_EQ(context("g(a)(T)b;"), CastContext::not_a_cast);
  EXPECT_EQ(context("a = -(T)b;"), CastContext::cast_after_unary_operator);
  EXPECT_EQ(context("a = !(T)b;"), CastContext::cast_after_unary_operator);
  EXPECT_EQ(context("a = c - (T)b;"), CastContext::cast);
  EXPECT_EQ(context("a = 1 & (T)b;"), CastContext::cast);
  EXPECT_EQ(context("return -(T)b;"), CastContext::cast_after_unary_operator);
}

// A constexpr object of a class or template-parameter type in the constant
// space is declared in the default space (the header says why); builtin
// scalars and vectors, arrays, pointers, references, functions and
// declarations without constexpr keep `constant`.
TEST(ConstexprConstants, OnlyConstexprObjectsLeaveTheConstantSpace) {
  TokenView v(
      "template <typename U> struct Max { static constexpr constant U init = Limits<U>::max; };\n"
      "template <typename U> struct Sum { DEFINE_SCAN() static constexpr constant U init = U(0); };\n"
      "struct S { public: static constant constexpr const metal::complex<float> z{1, 2}; };\n"
      "constexpr constant static float table[16] = {0};\n"
      "constant constexpr float* p = nullptr;\n"
      "constant float plain = 1;\n"
      "constexpr constant float& r = plain;\n"
      "void f(constant float* x) { constexpr constant Pair q = Pair(1, 2); }\n"
      "constant constexpr const int zero_helper = 0;\n"
      "static constexpr constant metal::float2 two = metal::float2(1, 2);\n");
  lower_constexpr_constants(v);
  EXPECT_EQ(v.joined(),
            "template <typename U> struct Max { static constexpr  U init = Limits<U>::max; };\n"
            "template <typename U> struct Sum { DEFINE_SCAN() static constexpr  U init = U(0); };\n"
            "struct S { public: static  constexpr const metal::complex<float> z{1, 2}; };\n"
            "constexpr constant static float table[16] = {0};\n"
            "constant constexpr float* p = nullptr;\n"
            "constant float plain = 1;\n"
            "constexpr constant float& r = plain;\n"
            "void f(constant float* x) { constexpr  Pair q = Pair(1, 2); }\n"
            "constant constexpr const int zero_helper = 0;\n"
            "static constexpr constant metal::float2 two = metal::float2(1, 2);\n");
}

TEST(OpenClKeywords, EveryUseOutsideAttributesIsRenamed) {
  TokenView v("struct S { int local; }; void f(S s [[local]]) { int global = s.local; pipe = read_only; }");
  rename_opencl_only_keywords(v);
  EXPECT_EQ(v.joined(), "struct S { int __mf_id_local; }; void f(S s [[local]]) { int __mf_id_global = "
                        "s.__mf_id_local; __mf_id_pipe = __mf_id_read_only; }");
  EXPECT_TRUE(is_opencl_only_keyword("write_only"));
  EXPECT_FALSE(is_opencl_only_keyword("device"));
}

TEST(OpenClKeywords, RewrittenTokensStay) {
  TokenView v("local global");
  v.replace(0, "local");
  rename_opencl_only_keywords(v);
  EXPECT_EQ(v.joined(), "local __mf_id_global");
}

TEST(IntegerExpression, EvaluatesWhatThePreprocessorLeaves) {
  auto value = [](std::string_view source) {
    TokenView v(source);
    return integer_expression(v, 0, v.count());
  };
  EXPECT_EQ(value("700 + 1"), 701);
  EXPECT_EQ(value("(2 + 3) * 4 - 0x1"), 19);
  EXPECT_EQ(value("-(3u) * 2L"), -6);
  EXPECT_EQ(value("010"), 8);
  EXPECT_EQ(value("n + 1"), std::nullopt);
  EXPECT_EQ(value("1 +"), std::nullopt);
  EXPECT_EQ(value("(1"), std::nullopt);
  EXPECT_EQ(value("1.5"), std::nullopt);
  EXPECT_EQ(value("9223372036854775807 * 2"), std::nullopt) << "overflow";
  EXPECT_EQ(value("99999999999999999999"), std::nullopt);
}

}  // namespace
