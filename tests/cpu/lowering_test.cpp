// The MSL lowering, fed source text and checked on what it emits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "msl_lowering.h"

using namespace mfagen::cpu;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

LoweredSource lower(const std::string& text, const std::map<uint32_t, ConstantValue>& constants = {}) {
  return lower_msl("# 1 \"k.metal\"\n" + text, constants);
}

std::string lowering_error(const std::string& text) {
  try {
    lower(text);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Lowering, AddressSpaceKeywordsBecomeClangAddressSpacesOutsideAttributes) {
  auto out = lower("kernel void k(device float* a [[buffer(0)]], threadgroup half* t [[threadgroup(1)]],\n"
                   "              constant uint& n [[buffer(2)]]) { thread float x = a[0]; }\n");
  EXPECT_THAT(out.text, HasSubstr("__global float* a [[buffer(0)]]"));
  EXPECT_THAT(out.text, HasSubstr("__local half* t [[threadgroup(1)]]"));
  EXPECT_THAT(out.text, HasSubstr("__constant uint& n"));
  // `thread` is the generic address space: locals are private anyway, and
  // methods, references and pointers written `thread` then behave as Metal's
  // (a local's decltype, `this` in a `thread` method, temporaries bound to
  // `thread const T&`).
  EXPECT_THAT(out.text, HasSubstr("{  float x = a[0]; }"));
  EXPECT_THAT(out.text, Not(HasSubstr("__private")));
}

TEST(Lowering, DecltypeDropsThePrivateAddressSpaceOfLocals) {
  auto out = lower("template <class T, T v> struct ic {};\n"
                   "kernel void k(device int* a [[buffer(0)]]) { constexpr int r = 1; ic<decltype(r), r> c; "
                   "decltype(auto) d = a[0]; }\n");
  EXPECT_THAT(out.text, HasSubstr("ic<__mf_unprivate_t<decltype(r)> , r> c;"));
  EXPECT_THAT(out.text, HasSubstr("decltype(auto) d"));
}

TEST(Lowering, ThreadReferenceReinterpretCastsGoThroughAGenericPointer) {
  auto out = lower("kernel void k(device float2* a [[buffer(0)]]) { float4 v;\n"
                   "  reinterpret_cast<thread float2&>(v) = a[0];\n"
                   "  reinterpret_cast<device float&>(a[0]) = 1.0f;\n"
                   "  float2* p = reinterpret_cast<float2*>(&v); }\n");
  EXPECT_THAT(out.text, HasSubstr("__mf_reinterpret_ref< float2&>(v)"));
  EXPECT_THAT(out.text, HasSubstr("reinterpret_cast<__global float&>(a[0])"));
  EXPECT_THAT(out.text, HasSubstr("reinterpret_cast<float2*>(&v)"));
}

TEST(Lowering, CastsToTemplateTypeParametersDecideAtInstantiation) {
  auto out = lower("template <typename T4, int N>\n"
                   "T4 f(float4 x) { T4 a = (T4)x; return a + T4(x) + (T4)(x) * sizeof(T4) + (N)x.x; }\n");
  EXPECT_THAT(out.text, HasSubstr("T4 a = ::metal::__mf_dep_cast<T4>{} ->*x;"));
  EXPECT_THAT(out.text, HasSubstr("::metal::__mf_dep_ctor<T4>(x)"));
  EXPECT_THAT(out.text, HasSubstr("::metal::__mf_dep_cast<T4>{} ->*(x)"));
  EXPECT_THAT(out.text, HasSubstr("sizeof(T4)"));
  EXPECT_THAT(out.text, HasSubstr("(N)x.x")) << "N is not a type";
}

TEST(Lowering, KernelAttributeListWithMaxTotalThreads) {
  auto out = lower("[[kernel, max_total_threads_per_threadgroup(128)]] void k(device float* a [[buffer(0)]]) {}\n");
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].name, "k");
}

TEST(Lowering, ExtractsKernelSignature) {
  auto out = lower("kernel void saxpy(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
                   "  constant float& a [[buffer(2)]], uint gid [[thread_position_in_grid]],\n"
                   "  ushort lane [[thread_index_in_simdgroup]]) {}\n");
  ASSERT_EQ(out.kernels.size(), 1u);
  const KernelSignature& k = out.kernels[0];
  EXPECT_EQ(k.name, "saxpy");
  EXPECT_EQ(k.location, "k.metal:1");
  ASSERT_EQ(k.params.size(), 5u);
  EXPECT_EQ(k.params[0].type, "device const float*");
  EXPECT_TRUE(k.params[0].is_const);
  EXPECT_EQ(k.params[0].space, AddressSpace::device);
  EXPECT_EQ(k.params[1].index, 1u);
  EXPECT_TRUE(k.params[2].is_reference);
  EXPECT_EQ(k.params[2].space, AddressSpace::constant);
  EXPECT_EQ(k.params[3].kind, KernelParam::Kind::builtin);
  EXPECT_EQ(k.params[3].attribute, "thread_position_in_grid");
  EXPECT_THAT(out.text, HasSubstr("extern \"C\" void __mf_kernel_saxpy(const __mf_launch_args* __mf_a)"));
  EXPECT_THAT(out.text, HasSubstr("*(const __constant float*)(__mf_a->buffers[2])"));
  EXPECT_THAT(out.text, HasSubstr("__mf_thread_id<uint>(__mf_a->thread_position_in_grid)"));
  EXPECT_THAT(out.text, HasSubstr("(ushort)(__mf_a->thread_index_in_simdgroup)"));
}

TEST(Lowering, KernelInNamespaceGetsThunkInSameNamespace) {
  auto out = lower("namespace ops { kernel void k(device float* a [[buffer(0)]]) {} }\n");
  EXPECT_THAT(out.text, HasSubstr("namespace ops {\nextern \"C\" void __mf_kernel_k"));
}

TEST(Lowering, KernelScopeThreadgroupArraysUsePerThreadgroupStorage) {
  auto out = lower("kernel void k(device float* a [[buffer(0)]]) {\n  threadgroup float tile[8][4];\n"
                   "  threadgroup float* row = &tile[0][0];\n}\n");
  EXPECT_THAT(out.text, HasSubstr("__local float (&tile)[8][4] = *(__local float (*)[8][4])(unsigned long)"
                                  "__mf_tg_alloc(0u, sizeof(float[8][4]), alignof(float[8][4]), \"tile\")"));
  EXPECT_THAT(out.text, HasSubstr("__local float* row = &tile[0][0]"));
}

TEST(Lowering, FunctionConstantsTakeTheLaunchValue) {
  std::map<uint32_t, ConstantValue> constants = {{3, parse_constant_value("true", "bool")}};
  auto out = lower("constant bool has_mask [[function_constant(3)]];\nconstant int n [[function_constant(4)]];\n"
                   "kernel void k(device float* a [[buffer(0)]]) { if (is_function_constant_defined(n)) a[0] = n; }\n",
                   constants);
  EXPECT_THAT(out.text, HasSubstr("static constexpr __constant bool has_mask = (bool)(true);"));
  EXPECT_THAT(out.text, HasSubstr("__mf_fc_defined_has_mask = true"));
  EXPECT_THAT(out.text, HasSubstr("static constexpr __constant int n = (int)(0);"));
  EXPECT_THAT(out.text, HasSubstr("if (__mf_fc_defined_n)"));
  ASSERT_EQ(out.function_constants.size(), 2u);
  EXPECT_EQ(out.function_constants[1].name, "n");
  EXPECT_EQ(out.function_constants[1].index, 4u);
}

TEST(Lowering, FunctionConstantIndexIsAnIntegerExpression) {
  // llama.cpp: #define FC_MUL_MM 700 ... [[function_constant(FC_MUL_MM + 1)]]
  auto out = lower("constant bool a [[function_constant(700 + 0)]];\nconstant bool b [[function_constant(700 + 1)]];\n"
                   "constant bool c [[function_constant((2 + 3) * 4 - 0x1)]];\n");
  ASSERT_EQ(out.function_constants.size(), 3u);
  EXPECT_EQ(out.function_constants[0].index, 700u);
  EXPECT_EQ(out.function_constants[1].index, 701u);
  EXPECT_EQ(out.function_constants[2].index, 19u);
}

TEST(Lowering, FunctionConstantOfAnIntegerTypedefTakesItsBuiltinType) {
  std::map<uint32_t, ConstantValue> constants = {{5, parse_constant_value("64", "int")}};
  auto out = lower("constant int32_t ns10 [[function_constant(5)]];\n", constants);
  EXPECT_THAT(out.text, HasSubstr("static constexpr __constant int32_t ns10 = (int32_t)(64);"));
}

TEST(Lowering, FunctionConstantTypeMismatchIsAnError) {
  std::map<uint32_t, ConstantValue> constants = {{0, parse_constant_value("1.5", "float")}};
  EXPECT_THROW(lower("constant int n [[function_constant(0)]];\n", constants), CompileError);
  std::map<uint32_t, ConstantValue> unused = {{7, parse_constant_value("1", "int")}};
  EXPECT_THROW(lower("constant int n [[function_constant(0)]];\n", unused), CompileError);
}

TEST(Lowering, VectorConstructorsAndCastsConvertValues) {
  auto out = lower("void f(int4 i, float2 h) { float4 a = float4(i); float4 b = float4(h, 1.0f, 2.0f);\n"
                   "  int4 c = (int4)a; float x = sizeof(float4); float4 d = a * (float4)c; }\n");
  EXPECT_THAT(out.text, HasSubstr("::metal::__mf_vec_ctor<float4>(i)"));
  EXPECT_THAT(out.text, HasSubstr("::metal::__mf_vec_ctor<float4>(h, 1.0f, 2.0f)"));
  EXPECT_THAT(out.text, HasSubstr("int4 c = ::metal::__mf_vec_cast<int4>{} ->*a"));
  EXPECT_THAT(out.text, HasSubstr("sizeof(float4)"));
  EXPECT_THAT(out.text, HasSubstr("a * ::metal::__mf_vec_cast<float4>{} ->*c"));
  EXPECT_THAT(out.text, Not(HasSubstr("void f(::metal")));
}

TEST(Lowering, TemplateSpelledVectorsConvertValuesToo) {
  auto out = lower("void f(int4 i) { vec<float, 4> a = vec<float, 4>(i); auto b = (vec<int, 4>)a;\n"
                   "  auto c = metal::vec<half, 2>(1.0h); }\n");
  EXPECT_THAT(out.text, HasSubstr("a = ::metal::__mf_vec_ctor<::metal::vec<float, 4>>(i)"));
  EXPECT_THAT(out.text, HasSubstr("b = ::metal::__mf_vec_cast<::metal::vec<int, 4>>{} ->*a"));
  EXPECT_THAT(out.text, HasSubstr("c = metal::__mf_vec_ctor<::metal::vec<half, 2>>(1.0h)"));
  EXPECT_THAT(out.text, HasSubstr("void f(int4 i) { vec<float, 4> a"));
}

TEST(Lowering, TemplatedKernelsRunThroughTheirHostNamedInstantiations) {
  auto out = lower("template <typename T, int N>\n[[kernel]] void scale(device T* a [[buffer(0)]],\n"
                   "  constant T& s [[buffer(1)]], uint i [[thread_position_in_grid]]) { a[i] *= s * N; }\n"
                   "template [[host_name(\"scale_f32\")]] [[kernel]] decltype(scale<float, 2>) scale<float, 2>;\n"
                   "template [[host_name(\"scale_f16\")]] [[kernel]] decltype(scale<half, 3>) scale<half, 3>;\n");
  ASSERT_EQ(out.kernels.size(), 2u);
  EXPECT_EQ(out.kernels[0].name, "scale_f32");
  EXPECT_EQ(out.kernels[1].params[0].type, "device half*");
  EXPECT_THAT(out.text, HasSubstr("void __mf_kernel_scale_f32(const __mf_launch_args* __mf_a) {\n  scale<float,2>("
                                  "(__global float*)(__mf_a->buffers[0])"));
  EXPECT_THAT(out.text, HasSubstr("*(const __constant half*)(__mf_a->buffers[1])"));
  EXPECT_THAT(out.text, Not(HasSubstr("decltype")));
}

TEST(Lowering, BuffersWithoutAttributeTakeTheLowestFreeIndices) {
  auto out = lower("kernel void k(device const float* in, device float* out [[buffer(0)]],\n"
                   "  constant int& n, uint i [[thread_position_in_grid]]) {}\n"
                   "template <typename T> [[kernel]] void t(device T* a) {}\n"
                   "template [[host_name(\"t_\" \"float\")]] [[kernel]] decltype(t<float>) t<float>;\n");
  ASSERT_EQ(out.kernels.size(), 2u);
  EXPECT_EQ(out.kernels[0].params[0].index, 1u);
  EXPECT_EQ(out.kernels[0].params[2].index, 2u);
  EXPECT_TRUE(out.kernels[0].params[2].is_reference);
  EXPECT_EQ(out.kernels[1].name, "t_float");
  EXPECT_EQ(out.kernels[1].params[0].index, 0u);
}

TEST(Lowering, OpenClKeywordsStayOrdinaryIdentifiers) {
  auto out = lower("void f() { int local = 1; int global = local; }\n");
  EXPECT_THAT(out.text, HasSubstr("int __mf_id_local = 1; int __mf_id_global = __mf_id_local;"));
}

struct BadSource {
  const char* name;
  const char* source;
  const char* message;
};

class LoweringErrors : public ::testing::TestWithParam<BadSource> {};

TEST_P(LoweringErrors, NameTheLineAndTheProblem) {
  EXPECT_THAT(lowering_error(GetParam().source), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LoweringErrors,
    ::testing::Values(
        BadSource{"double", "\nvoid f() { double x = 1; }", "k.metal:2: error: 'double' is not supported by Metal"},
        BadSource{"no_attribute", "kernel void k(device float* a, uint n) {}", "'n' needs an attribute"},
        BadSource{"duplicate_function_constant",
                  "constant bool a [[function_constant(4)]];\nconstant bool b [[function_constant(2 + 2)]];",
                  "k.metal:2: error: function_constant index 4 is declared twice ('a' and 'b')"},
        BadSource{"function_constant_not_constant", "constant bool a [[function_constant(n)]];",
                  "function_constant index must be an integer constant expression"},
        BadSource{"duplicate_buffer",
                  "kernel void k(device float* a [[buffer(1)]], device float* b [[buffer(1)]]) {}",
                  "duplicate [[buffer(1)]]"},
        BadSource{"buffer_not_pointer", "kernel void k(float a [[buffer(0)]]) {}",
                  "must point to device or constant memory"},
        BadSource{"non_void", "kernel int k(device float* a [[buffer(0)]]) { return 0; }",
                  "a kernel must return void"},
        BadSource{"bad_index", "kernel void k(device float* a [[buffer(31)]]) {}", "integer index 0..30"},
        BadSource{"unknown_attribute", "kernel void k(uint a [[vertex_id]]) {}", "'vertex_id' is not supported"},
        BadSource{"tg_unsized_initialized_array",
                  "kernel void k(device float* a [[buffer(0)]]) { threadgroup float t[] = {0, 1}; }",
                  "threadgroup array 't' needs its size (its initializer is not applied)"},
        BadSource{"instance_without_host_name",
                  "template <typename T> [[kernel]] void k(device T* a [[buffer(0)]]) {}\n"
                  "template [[kernel]] decltype(k<float>) k<float>;",
                  "need [[host_name(\"name\")]]"},
        BadSource{"instance_without_semicolon",
                  "template <typename T> [[kernel]] void k(device T* a [[buffer(0)]]) {}\n"
                  "template [[host_name(\"k_f\")]] [[kernel]] decltype(k<float>) k<float>",
                  "k.metal:2: error: explicit kernel instantiation 'k_f' needs a closing ';'"},
        BadSource{"unary_cast", "void f(int4 i) { float4 a = -(float4)i; }", "instead of a unary operator"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
