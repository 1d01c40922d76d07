// Constructs from MLX's and llama.cpp's kernels (kernels/third_party_style*,
// written for these tests) compile unchanged and compute what Metal would;
// each result is checked against plain C++.
#include <gtest/gtest.h>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

std::shared_ptr<const cpu::Module> compile_style(bool has_bias, bool instrument = true) {
  cpu::CompileOptions options;
  options.instrument = instrument;
  options.constants[0] = cpu::parse_constant_value(has_bias ? "true" : "false", "bool");
  return cpu::compile_file(kernel_file("third_party_style.metal"), options);
}

TEST(ThirdPartyStyle, ScalarIdiomsWithoutTheGatedBuffer) {
  auto module = compile_style(false);
  std::vector<uint16_t> b = {0x3fc0, 0x4000};  // bfloat 1.5, 2.0
  std::vector<float> out(11, 10.0f);
  // has_bias is false: the [[function_constant(has_bias)]] buffer does not exist.
  auto result = run(*module, "scalar_idioms", {1, 1, 1}, {1, 1, 1}, {bind(0, b), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[0], (0.5f + 1.5f) * 2.0f) << "float += / *= a device bfloat";
  EXPECT_EQ(out[1], 15.0f) << "constant table through a constant float* parameter";
  EXPECT_EQ(out[2], 10.0f + 3.0f + 1.0f) << "thread T* deduced from a local's address";
  EXPECT_EQ(out[3], 4.5f) << "a temporary bound to thread const short&";
  EXPECT_EQ(out[4], 11.0f) << "function as a template argument";
  EXPECT_EQ(out[5], 1.0f) << "float4 = {1.0f} zero-fills, = {} is zero";
  EXPECT_EQ(out[6], -1.0f) << "has_bias false";
  EXPECT_EQ(out[7], 7.0f) << "integral_constant<decltype(local), local>";
  EXPECT_EQ(out[8], 1.0f) << "_disjunction under #pragma METAL internals";
  EXPECT_EQ(out[9], 2.5f) << "a `const constant` constructor for a program-scope constant";
  EXPECT_EQ(out[10], 1.5f + 2.25f + 4.0f + 8.0f) << "T deduced through an alias template over vec<T, 2>";
}

TEST(ThirdPartyStyle, ScalarIdiomsWithTheGatedBuffer) {
  auto module = compile_style(true);
  std::vector<uint16_t> b = {0x3fc0, 0x4000};
  std::vector<float> out(11, 10.0f), bias = {2.5f};
  auto result = run(*module, "scalar_idioms", {1, 1, 1}, {1, 1, 1}, {bind(0, b), bind(1, out), bind(2, bias)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[6], 2.5f);
}

TEST(ThirdPartyStyle, FragmentMatmulThroughThreadElements) {
  auto module = compile_style(false);
  std::vector<float> a(64), b(64), d(64, -1.0f);
  for (int i = 0; i < 64; ++i) {
    a[i] = float(i % 7) - 3.0f;
    b[i] = float(i % 5) * 0.5f;
  }
  auto result = run(*module, "fragment_matmul_float", {1, 1, 1}, {32, 1, 1}, {bind(0, a), bind(1, b), bind(2, d)});
  EXPECT_TRUE(IsClean(result));
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      double expected = 0;
      for (int k = 0; k < 8; ++k) expected += double(a[r * 8 + k]) * b[k * 8 + c];
      EXPECT_EQ(d[r * 8 + c], float(expected)) << "d[" << r << "][" << c << "]";
    }
}

TEST(ThirdPartyStyle, MatrixBlocksThroughHalf4x4) {
  auto module = compile_style(false);
  const int n = 3;
  std::vector<float> blocks(16 * n), x(4 * n), y(4 * n, 0.0f);
  for (int i = 0; i < 16 * n; ++i) blocks[i] = float(i % 9) * 0.25f - 1.0f;  // exact in half
  for (int i = 0; i < 4 * n; ++i) x[i] = float(i % 4) + 0.5f;
  auto result =
      run(*module, "matrix_blocks_half", {uint32_t(n), 1, 1}, {1, 1, 1}, {bind(0, blocks), bind(1, x), bind(2, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < 4; ++r) {
      double expected = 0;
      for (int c = 0; c < 4; ++c) {  // column-major: element (row r, column c) at [c * 4 + r]
        double m = blocks[16 * i + c * 4 + r] + (r == 3 && c == 3 ? 1.0 : 0.0);
        expected += m * x[4 * i + c];
      }
      EXPECT_FLOAT_EQ(y[4 * i + r], float(expected)) << "block " << i << " row " << r;
    }
}

TEST(ThirdPartyStyle, CastsToATemplateVectorTypeConvertValues) {
  auto module = compile_style(false);
  std::vector<float> src = {1.5f, -2.0f, 3.25f, 0.125f, 100.0f, -0.5f, 6.0f, 1024.0f}, dst(8, 0.0f);
  auto result = run(*module, "dependent_vectors_half4", {2, 1, 1}, {1, 1, 1}, {bind(0, src), bind(1, dst)});
  EXPECT_TRUE(IsClean(result));
  for (size_t i = 0; i < src.size(); ++i)  // every intermediate is exact in half
    EXPECT_EQ(dst[i], 0.5f * src[i] + 2.0f * src[i]) << "element " << i;
}

class ElementAlignedVectors : public ::testing::TestWithParam<bool> {};

// With and without the detectors' instrumentation (`exec --no-detectors`).
TEST_P(ElementAlignedVectors, LoadAndStoreWithoutFaulting) {
  auto module = compile_style(false, GetParam());
  int32_t stride = 6;  // 24-byte rows: every other float4 access is 8-byte aligned
  std::vector<float> src(18), dst(18, 0.0f);
  for (int i = 0; i < 18; ++i) src[i] = float(i);
  auto result = run(*module, "unaligned_rows", {3, 1, 1}, {1, 1, 1}, {bind(0, src), bind(1, dst), bind_scalar(2, stride)});
  EXPECT_TRUE(IsClean(result));
  for (int row = 0; row < 3; ++row)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(dst[row * 6 + i], i < 4 ? 2.0f * src[row * 6 + i] : 0.0f);
}
INSTANTIATE_TEST_SUITE_P(Instrumented, ElementAlignedVectors, ::testing::Bool());

// MLX's NAX kernels (kernels/third_party_style_nax.metal): metal::uniform,
// __metal_get_thread_index_in_simdgroup, metal::remove_addrspace_t,
// `metal::vec<T, N> x{0}` and `AccumType(frag[j])`.
TEST(ThirdPartyStyleNax, ScalarIdioms) {
  auto module = compile_kernel("third_party_style_nax.metal");
  std::vector<float> out(32 * 6, -1.0f), scale = {1.5f};
  std::vector<int32_t> count = {10};
  auto result = run(*module, "nax_idioms", {1, 1, 1}, {32, 1, 1}, {bind(0, out), bind(1, scale), bind(2, count)});
  EXPECT_TRUE(IsClean(result));
  for (int lane = 0; lane < 32; ++lane) {
    const float* o = &out[lane * 6];
    EXPECT_EQ(o[0], float(lane)) << "__metal_get_thread_index_in_simdgroup(ushort())";
    EXPECT_EQ(o[1], 3.0f * float(lane)) << "uniform<float> = make_uniform(x) * make_uniform(2.0f)";
    EXPECT_EQ(o[2], 3.0f) << "i < uniform<int>, i += uniform<int> (10 in steps of 4)";
    EXPECT_EQ(o[3], 7.0f) << "integral constant typed through remove_addrspace_t";
    EXPECT_EQ(o[4], 20.0f * float(lane) + 1.0f) << "vec<T, N>{...} zero-fills; AccumType(frag[j])";
    EXPECT_EQ(o[5], 41.0f) << "float4{float2, float2}";
  }
}

// Fragments declared through an alias template over vec and deduced through
// it (MLX NAX's dtype_frag_t<T>): T is bfloat, half, float or bool.
TEST(ThirdPartyStyleNax, FragmentsDeducedThroughAnAliasTemplate) {
  auto module = compile_kernel("third_party_style_nax.metal");
  const double src[8] = {1.5, -2.0, 0.25, 3.0, -0.5, 8.0, 0.125, -1.0};  // exact in bfloat and half
  std::vector<uint8_t> mask = {1, 0, 1, 1, 0, 0, 1, 0};
  for (const char* entry : {"alias_fragments_bf16", "alias_fragments_half"}) {
    bool bf16 = std::string(entry).find("bf16") != std::string::npos;
    std::vector<uint16_t> in(8);
    for (int i = 0; i < 8; ++i) in[i] = bf16 ? to_bfloat_bits(src[i]) : to_half_bits(src[i]);
    std::vector<float> out(27, -7.0f);
    auto result = run(*module, entry, {1, 1, 1}, {1, 1, 1}, {bind(0, in), bind(1, mask), bind(2, out)});
    EXPECT_TRUE(IsClean(result)) << entry;
    double sum = 0;
    int seen = 0;
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(out[i], float(1.0 + src[i] * i)) << entry << " element " << i;
      EXPECT_EQ(out[16 + i], mask[i] ? float(src[i]) : -1.0f) << entry << " mask element " << i;
      sum += src[i];
      seen += mask[i];
    }
    EXPECT_EQ(out[24], float(sum)) << entry << ": T deduced with an explicit Op before it";
    EXPECT_EQ(out[26], float(seen)) << entry << ": a bool fragment";
  }
}

// Cooperative inputs of a matmul2d with transposed operands hold the operand
// as stored (MLX's S = Q K^T loads K rows into the right input): filled
// through get_multidimensional_index they give op(A) * op(B) under any
// layout; filled by MLX NAX's fragment positions only under the default one.
struct CooperativeInputsCase {
  const char* entry;
  bool tl, tr;
  uint32_t seed;
  bool expect_product;
};

class CooperativeInputs : public ::testing::TestWithParam<CooperativeInputsCase> {};

TEST_P(CooperativeInputs, ProductOfTheStoredOperands) {
  const CooperativeInputsCase& c = GetParam();
  static auto module = compile_kernel("third_party_style_nax.metal");
  std::vector<uint16_t> a(16 * 16), b(16 * 32);
  for (size_t i = 0; i < a.size(); ++i) a[i] = to_half_bits(double(int(i * 7 % 17) - 8) / 8.0);
  for (size_t i = 0; i < b.size(); ++i) b[i] = to_half_bits(double(int(i * 5 % 13) - 6) / 4.0);
  std::vector<float> out(16 * 32, -1.0f);
  cpu::LaunchOptions options;
  options.threadgroups = {1, 1, 1};
  options.threads_per_threadgroup = {32, 1, 1};
  options.buffers = {bind(0, a), bind(1, b), bind(2, out)};
  options.tensor_layout_seed = c.seed;
  auto result = cpu::launch(*module, c.entry, options);
  EXPECT_TRUE(IsClean(result));
  int wrong = 0;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 32; ++n) {
      double expected = 0;  // exact: multiples of 1/32 summed over 16 terms
      for (int k = 0; k < 16; ++k)
        expected += half_to_double(a[c.tl ? k * 16 + m : m * 16 + k]) *
                    half_to_double(b[c.tr ? n * 16 + k : k * 32 + n]);
      wrong += out[m * 32 + n] != float(expected);
    }
  if (c.expect_product)
    EXPECT_EQ(wrong, 0) << c.entry << " seed " << c.seed;
  else
    EXPECT_GT(wrong, 16 * 32 / 2) << c.entry << " seed " << c.seed << ": a permuted layout must not match";
}
INSTANTIATE_TEST_SUITE_P(
    Nax, CooperativeInputs,
    ::testing::Values(CooperativeInputsCase{"inputs_nn", false, false, 0, true},
                      CooperativeInputsCase{"inputs_nt", false, true, 0, true},
                      CooperativeInputsCase{"inputs_tn", true, false, 0, true},
                      CooperativeInputsCase{"inputs_tt", true, true, 0, true},
                      CooperativeInputsCase{"inputs_nt", false, true, 5, true},
                      CooperativeInputsCase{"inputs_tt", true, true, 5, true},
                      CooperativeInputsCase{"guessed_nt", false, true, 0, true},
                      CooperativeInputsCase{"guessed_tn", true, false, 0, true},
                      CooperativeInputsCase{"guessed_nt", false, true, 5, false},
                      CooperativeInputsCase{"guessed_tn", true, false, 5, false}),
    [](const ::testing::TestParamInfo<CooperativeInputsCase>& info) {
      return std::string(info.param.entry) + "_seed" + std::to_string(info.param.seed);
    });

}  // namespace
}  // namespace mfagen::cputest
