// Threadgroup reductions with threadgroup memory and barriers, over several
// threadgroups with a partly covered last one. Inputs are multiples of 1/16
// small enough that every float sum is exact in any order, so results are
// compared exactly with a plain C++ reference.
#include <gtest/gtest.h>

#include <random>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

std::vector<float> exact_inputs(uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-64, 64);
  std::vector<float> in(n);
  for (float& x : in) x = float(dist(rng)) / 16.0f;
  return in;
}

struct ReduceCase {
  uint32_t n;
  uint32_t threads;
  friend std::ostream& operator<<(std::ostream& out, const ReduceCase& c) {
    return out << "n=" << c.n << " threads=" << c.threads;
  }
};

class ThreadgroupReduction : public ::testing::TestWithParam<ReduceCase> {
 protected:
  uint32_t groups() const { return (GetParam().n + GetParam().threads - 1) / GetParam().threads; }
  double sum_of_group(const std::vector<float>& in, uint32_t g) const {
    double s = 0;
    for (uint32_t i = g * GetParam().threads; i < std::min<uint32_t>(GetParam().n, (g + 1) * GetParam().threads); ++i)
      s += in[i];
    return s;
  }
  double max_of_group(const std::vector<float>& in, uint32_t g) const {
    double m = -INFINITY;
    for (uint32_t i = g * GetParam().threads; i < std::min<uint32_t>(GetParam().n, (g + 1) * GetParam().threads); ++i)
      m = std::max<double>(m, in[i]);
    return m;
  }
};

TEST_P(ThreadgroupReduction, TreeInKernelScopeArray) {
  auto [n, threads] = GetParam();
  auto module = compile_kernel("threadgroup_reduce.metal");
  std::vector<float> in = exact_inputs(n, n * 31 + threads);
  std::vector<float> partial(groups(), NAN);
  uint32_t count = n;
  auto result = run(*module, "reduce_tree", {groups(), 1, 1}, {threads, 1, 1},
                    {bind(0, in), bind(1, partial), bind_scalar(2, count)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t g = 0; g < groups(); ++g) EXPECT_EQ(partial[g], sum_of_group(in, g)) << "threadgroup " << g;
}

TEST_P(ThreadgroupReduction, SumAndMaxInThreadgroupBuffer) {
  auto [n, threads] = GetParam();
  auto module = compile_kernel("threadgroup_reduce.metal");
  std::vector<float> in = exact_inputs(n, n * 37 + threads);
  std::vector<float> partial(2 * groups(), NAN);  // float2 per threadgroup
  uint32_t count = n;
  auto result = run(*module, "reduce_sum_max", {groups(), 1, 1}, {threads, 1, 1},
                    {bind(0, in), bind(1, partial), bind_scalar(2, count)}, {{0, threads * 8ull}});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t g = 0; g < groups(); ++g) {
    EXPECT_EQ(partial[2 * g], sum_of_group(in, g)) << "sum of threadgroup " << g;
    EXPECT_EQ(partial[2 * g + 1], max_of_group(in, g)) << "max of threadgroup " << g;
  }
}

TEST_P(ThreadgroupReduction, SimdSumThenThreadgroup) {
  auto [n, threads] = GetParam();
  auto module = compile_kernel("threadgroup_reduce.metal");
  std::vector<float> in = exact_inputs(n, n * 41 + threads);
  std::vector<float> partial(groups(), NAN);
  uint32_t count = n;
  auto result = run(*module, "reduce_simd", {groups(), 1, 1}, {threads, 1, 1},
                    {bind(0, in), bind(1, partial), bind_scalar(2, count)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t g = 0; g < groups(); ++g) EXPECT_EQ(partial[g], sum_of_group(in, g)) << "threadgroup " << g;
}

INSTANTIATE_TEST_SUITE_P(Sizes, ThreadgroupReduction,
                         ::testing::Values(ReduceCase{1, 32}, ReduceCase{100, 32}, ReduceCase{1000, 64},
                                           ReduceCase{1000, 256}, ReduceCase{4097, 1024}, ReduceCase{512, 128}),
                         [](const auto& info) {
                           return "n" + std::to_string(info.param.n) + "_threads" + std::to_string(info.param.threads);
                         });

// reduce_simd does not need a power of two: 48 threads leave the second
// simdgroup with 16 lanes.
TEST(ThreadgroupReductionPartialSimdgroup, SimdSumWith48Threads) {
  auto module = compile_kernel("threadgroup_reduce.metal");
  const uint32_t n = 200, threads = 48, groups = (n + threads - 1) / threads;
  std::vector<float> in = exact_inputs(n, 7);
  std::vector<float> partial(groups, NAN);
  uint32_t count = n;
  auto result = run(*module, "reduce_simd", {groups, 1, 1}, {threads, 1, 1},
                    {bind(0, in), bind(1, partial), bind_scalar(2, count)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t g = 0; g < groups; ++g) {
    double s = 0;
    for (uint32_t i = g * threads; i < std::min(n, (g + 1) * threads); ++i) s += in[i];
    EXPECT_EQ(partial[g], s) << "threadgroup " << g;
  }
}

}  // namespace
}  // namespace mfagen::cputest
