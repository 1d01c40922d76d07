// The checker's lowering and the cpu backend's run the same vector-syntax
// and keyword passes (mfagen_msl_syntax): the same MSL lowers to the same
// text in both, so what the checker parses is what the cpu backend runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "check/lowering.h"
#include "msl_lowering.h"

namespace {

// The line of `text` that starts with `prefix` (after indentation).
std::string line_starting_with(const std::string& text, std::string_view prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::string_view trimmed(line);
    trimmed.remove_prefix(std::min(trimmed.find_first_not_of(' '), trimmed.size()));
    if (trimmed.starts_with(prefix)) return std::string(trimmed);
  }
  return "<no line starting with '" + std::string(prefix) + "'>";
}

TEST(SharedRewrite, CheckerAndCpuBackendLowerVectorSyntaxAlike) {
  const std::string body =
      "  float4 a = float4(i) + metal::float4(1.0f) + (float4)i;\n"
      "  vec<float, 2> b = vec<float, 2>(a.xy) * (vec<float, 2>)a.zw;\n"
      "  int local = (int)sizeof(half4) + int(a.x);\n"
      "  out[0] = a.x + b.y + float(local);\n";
  const std::string source =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "kernel void k(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {\n"
      "  int4 i = int4(gid);\n" + body + "}\n";
  const std::string checked = mfagen::check::lower_for_check(source).text;
  const std::string ran = mfagen::cpu::lower_msl("# 1 \"k.metal\"\n" + source, {}).text;
  for (std::string_view statement : {"int4 i", "float4 a", "vec<float, 2> b", "int __mf_id_local", "out[0]"}) {
    std::string line = line_starting_with(checked, statement);
    EXPECT_EQ(line, line_starting_with(ran, statement));
    EXPECT_THAT(line, ::testing::Not(::testing::HasSubstr("<no line")));
  }
  EXPECT_THAT(checked, ::testing::HasSubstr("float4 a = ::metal::__mf_vec_ctor<float4>(i) + "
                                            "metal::__mf_vec_ctor<::metal::float4>(1.0f) + "
                                            "::metal::__mf_vec_cast<float4>{} ->*i;"));
}

TEST(SharedRewrite, UnaryOperatorBeforeAVectorCastIsAnErrorAndAFinding) {
  const std::string source = "void f(int4 i) {\n  float4 a = -(float4)i;\n}\n";
  const mfagen::check::LoweredMsl checked = mfagen::check::lower_for_check(source);
  ASSERT_EQ(checked.findings.size(), 1u);
  EXPECT_EQ(checked.findings[0].rule, "cpu-lowering");
  EXPECT_EQ(checked.findings[0].offset, source.find("(float4)"));
  try {
    mfagen::cpu::lower_msl("# 1 \"k.metal\"\n" + source, {});
    FAIL() << "no error";
  } catch (const mfagen::cpu::CompileError& e) {
    EXPECT_EQ(std::string(e.what()), "k.metal:2: error: " + checked.findings[0].message);
  }
}

// A class template partial specialization on vec<T, 2> (MLX's
// fft/readwrite.h) lowers to the same text in both
// (mfagen/msl/vec_partial_specializations.h): what the checker accepts is
// what the cpu backend runs.
TEST(SharedRewrite, PartialSpecializationOnVecLowersAlike) {
  const std::string source =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "template <typename storage_T> struct Scalar { using type = storage_T; };\n"
      "template <typename T> struct Scalar<metal::vec<T, 2>> {\n"
      "  using type = T;\n};\n";
  const std::string checked = mfagen::check::lower_for_check(source).text;
  const std::string ran = mfagen::cpu::lower_msl("# 1 \"k.metal\"\n" + source, {}).text;
  std::string line = line_starting_with(checked, "template <> struct Scalar");
  EXPECT_EQ(line, line_starting_with(ran, "template <> struct Scalar"));
  EXPECT_THAT(line, ::testing::HasSubstr("template <typename __mf_vec_elem_T> struct "
                                         "Scalar<::__mf_ext_vec<__mf_vec_elem_T, 2>"));
  EXPECT_THAT(line, ::testing::HasSubstr("template <> struct Scalar< ::metal::vec<bfloat, 2>>;"));
  // T, the logical element (bool for bool vectors), opens the body.
  line = line_starting_with(checked, "private: typedef");
  EXPECT_EQ(line, line_starting_with(ran, "private: typedef"));
  EXPECT_THAT(line, ::testing::HasSubstr("typedef ::__mf_vec_lelem_t<::__mf_ext_vec<__mf_vec_elem_T, 2>> T; public:"));
}

// Function-pointer template parameters (llama.cpp's dequantizers, MLX's
// RadixFunc<T>) become references to function in both lowerings
// (mfagen/msl/function_pointers.h); an alias of a pointer to function used
// elsewhere stays a pointer in both.
TEST(SharedRewrite, FunctionPointerTemplateParametersLowerAlike) {
  const std::string source =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "template <typename T> using Radix = void (*)(thread T*, thread T*);\n"
      "using Unary = float (*)(float);\n"
      "template <typename T, Radix<T> radix, void (*deq)(device const T*, short, thread T&)> void step();\n"
      "float apply(Unary f, float x) { return f(x); }\n";
  const std::string checked = mfagen::check::lower_for_check(source).text;
  const std::string ran = mfagen::cpu::lower_msl("# 1 \"k.metal\"\n" + source, {}).text;
  for (std::string_view start : {"template <typename T> using Radix", "using Unary", "template <typename T, Radix"}) {
    std::string line = line_starting_with(checked, start);
    EXPECT_THAT(line, ::testing::Not(::testing::HasSubstr("<no line"))) << start;
    // The two spell address spaces differently; the pointer or reference is the same.
    EXPECT_EQ(line.find('*') == std::string::npos, line_starting_with(ran, start).find('*') == std::string::npos) << line;
  }
  EXPECT_THAT(line_starting_with(checked, "template <typename T> using Radix"), ::testing::HasSubstr("= void (&)("));
  EXPECT_THAT(line_starting_with(checked, "using Unary"), ::testing::HasSubstr("= float (*)(float)"));
  EXPECT_THAT(line_starting_with(checked, "template <typename T, Radix"), ::testing::HasSubstr("void (&deq)("));
  EXPECT_THAT(line_starting_with(ran, "template <typename T, Radix"), ::testing::HasSubstr("void (&deq)("));
}

// The function pointers extension both lowerings enable admits virtual
// functions, which Metal does not have: both report the specifier, with the
// same message.
TEST(SharedRewrite, VirtualIsAnErrorAndAFinding) {
  const std::string source = "struct Op {\n  virtual float run(float x) const { return x; }\n};\n";
  const mfagen::check::LoweredMsl checked = mfagen::check::lower_for_check(source);
  ASSERT_EQ(checked.findings.size(), 1u);
  EXPECT_EQ(checked.findings[0].rule, "virtual-function");
  EXPECT_EQ(checked.findings[0].offset, source.find("virtual"));
  try {
    mfagen::cpu::lower_msl("# 1 \"k.metal\"\n" + source, {});
    FAIL() << "no error";
  } catch (const mfagen::cpu::CompileError& e) {
    EXPECT_EQ(std::string(e.what()), "k.metal:2: error: " + checked.findings[0].message);
  }
}

}  // namespace
