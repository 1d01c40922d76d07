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

}  // namespace
}  // namespace mfagen::cputest
