// simdgroup_matrix on the cpu backend: Apple's lane layout of
// thread_elements(), and 8x8-tile matmuls of half, bfloat and float inputs
// (float accumulation; plain, transposed-B and threadgroup-staged variants)
// against a float64 reference computed here from the rounded inputs.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

// ---- lane layout ----

uint32_t layout_row(uint32_t lane) { return 4 * (lane / 16) + (lane / 2) % 4; }
uint32_t layout_col(uint32_t lane) { return 4 * ((lane / 8) % 2) + 2 * (lane % 2); }

TEST(SimdgroupMatrixLayout, LaneHoldsAppleLayoutElementsAfterLoad) {
  auto module = compile_kernel("simdgroup_layout.metal");
  std::vector<float> in(64), out(64, -1.0f);
  for (int i = 0; i < 64; ++i) in[i] = float(i);  // value = 8 * row + col
  auto result = run(*module, "elements_of_loaded", {1, 1, 1}, {32, 1, 1}, {bind(0, in), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint32_t r = layout_row(lane), c = layout_col(lane);
    EXPECT_EQ(out[2 * lane], float(8 * r + c)) << "lane " << lane << " element 0";
    EXPECT_EQ(out[2 * lane + 1], float(8 * r + c + 1)) << "lane " << lane << " element 1";
  }
}

TEST(SimdgroupMatrixLayout, StoreWritesEachLanesElementsToItsPosition) {
  auto module = compile_kernel("simdgroup_layout.metal");
  std::vector<float> out(64, -1.0f);
  auto result = run(*module, "store_of_elements", {1, 1, 1}, {32, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint32_t r = layout_row(lane), c = layout_col(lane);
    EXPECT_EQ(out[8 * r + c], 1000.0f + 2 * lane) << "lane " << lane;
    EXPECT_EQ(out[8 * r + c + 1], 1000.0f + 2 * lane + 1) << "lane " << lane;
  }
}

TEST(SimdgroupMatrixLayout, HalfMatrixLoadedFromThreadgroupMemoryHasTheSameLayout) {
  auto module = compile_kernel("simdgroup_layout.metal");
  std::vector<uint16_t> in(64), out(64, 0xffff);
  for (int i = 0; i < 64; ++i) in[i] = half_bits_exact(i);
  auto result = run(*module, "elements_of_loaded_half", {1, 1, 1}, {32, 1, 1}, {bind(0, in), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint32_t r = layout_row(lane), c = layout_col(lane);
    EXPECT_EQ(half_to_double(out[2 * lane]), 8 * r + c) << "lane " << lane;
    EXPECT_EQ(half_to_double(out[2 * lane + 1]), 8 * r + c + 1) << "lane " << lane;
  }
}

// ---- matmul ----

enum class Elem { half, bfloat, float32 };

const char* define_of(Elem e) {
  switch (e) {
    case Elem::half: return "ELEM=half";
    case Elem::bfloat: return "ELEM=bfloat";
    case Elem::float32: return "ELEM=float";
  }
  return "";
}

const char* name_of(Elem e);
void PrintTo(Elem e, std::ostream* out) { *out << name_of(e); }

const char* name_of(Elem e) {
  switch (e) {
    case Elem::half: return "half";
    case Elem::bfloat: return "bfloat";
    case Elem::float32: return "float";
  }
  return "";
}

// A matrix of random values in [-1, 1], rounded to the element type: `bytes`
// is what the kernel reads, `values` the exact rounded values.
struct Matrix {
  std::vector<std::byte> bytes;
  std::vector<double> values;
};

Matrix random_matrix(Elem e, size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Matrix m;
  m.values.resize(count);
  m.bytes.resize(count * (e == Elem::float32 ? 4 : 2));
  for (size_t i = 0; i < count; ++i) {
    double x = dist(rng);
    if (e == Elem::half) {
      uint16_t bits = to_half_bits(x);
      m.values[i] = half_to_double(bits);
      std::memcpy(m.bytes.data() + 2 * i, &bits, 2);
    } else if (e == Elem::bfloat) {
      uint16_t bits = to_bfloat_bits(x);
      m.values[i] = bfloat_to_double(bits);
      std::memcpy(m.bytes.data() + 2 * i, &bits, 2);
    } else {
      float f = float(x);
      m.values[i] = f;
      std::memcpy(m.bytes.data() + 4 * i, &f, 4);
    }
  }
  return m;
}

struct Dims {
  uint32_t M, N, K;
};

// (element type, kernel, M, N, K)
using MatmulCase = std::tuple<Elem, std::string, uint32_t, uint32_t, uint32_t>;

class SimdgroupMatmul : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(SimdgroupMatmul, MatchesFloat64Reference) {
  const auto [elem, kernel, M, N, K] = GetParam();
  const bool transposed_b = kernel == "matmul_nt";
  const bool tiled = kernel == "matmul_tiled";
  auto module = compile_kernel("simdgroup_matmul.metal", {define_of(elem)});

  std::mt19937 rng(1234 + M * 7 + N * 13 + K * 17 + int(elem));
  Matrix a = random_matrix(elem, size_t(M) * K, rng);
  Matrix b = random_matrix(elem, size_t(K) * N, rng);  // K x N, or N x K when transposed
  std::vector<float> c(size_t(M) * N, std::numeric_limits<float>::quiet_NaN());
  Dims dims{M, N, K};

  Dim3 groups = tiled ? Dim3{(N + 15) / 16, (M + 15) / 16, 1} : Dim3{N / 8, M / 8, 1};
  Dim3 threads = tiled ? Dim3{128, 1, 1} : Dim3{32, 1, 1};
  auto result = run(*module, kernel, groups, threads,
                    {cpu::BufferBinding{0, a.bytes}, cpu::BufferBinding{1, b.bytes}, bind(2, c), bind_scalar(3, dims)});
  EXPECT_TRUE(IsClean(result));

  double worst = 0;
  for (uint32_t i = 0; i < M; ++i) {
    for (uint32_t j = 0; j < N; ++j) {
      double sum = 0, magnitude = 0;
      for (uint32_t k = 0; k < K; ++k) {
        double bkj = transposed_b ? b.values[size_t(j) * K + k] : b.values[size_t(k) * N + j];
        sum += a.values[size_t(i) * K + k] * bkj;
        magnitude += std::fabs(a.values[size_t(i) * K + k] * bkj);
      }
      // Float accumulation of K products (exact for half/bfloat inputs, one
      // rounding each for float): |error| <= (K + 1) u sum|a b|, u = 2^-24.
      const double tolerance = (K + 2) * std::ldexp(1.0, -24) * magnitude + 1e-30;
      const double error = std::fabs(double(c[size_t(i) * N + j]) - sum);
      worst = std::max(worst, error);
      ASSERT_LE(error, tolerance) << "C(" << i << "," << j << ") = " << c[size_t(i) * N + j] << ", reference "
                                  << sum;
    }
  }
  RecordProperty("max_abs_error", std::to_string(worst));
}

std::string case_name(const ::testing::TestParamInfo<MatmulCase>& info) {
  const auto& [elem, kernel, M, N, K] = info.param;
  return std::string(name_of(elem)) + "_" + kernel + "_" + std::to_string(M) + "x" + std::to_string(N) + "x" +
         std::to_string(K);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SimdgroupMatmul,
                         ::testing::Combine(::testing::Values(Elem::half, Elem::bfloat, Elem::float32),
                                            ::testing::Values("matmul_nn", "matmul_mixed", "matmul_nt", "matmul_tiled"),
                                            ::testing::Values(8u, 16u, 64u), ::testing::Values(8u, 16u, 64u),
                                            ::testing::Values(8u, 64u)),
                         case_name);

// Non-square shapes the tiled kernel covers with partial 16x16 tiles.
INSTANTIATE_TEST_SUITE_P(Ragged, SimdgroupMatmul,
                         ::testing::Values(MatmulCase{Elem::float32, "matmul_tiled", 24, 40, 16},
                                           MatmulCase{Elem::half, "matmul_tiled", 40, 8, 24},
                                           MatmulCase{Elem::bfloat, "matmul_nt", 24, 56, 32}),
                         case_name);

}  // namespace
}  // namespace mfagen::cputest
