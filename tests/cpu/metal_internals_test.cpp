// The undocumented Metal that metal-flash-attention v1 is built on
// (kernels/metal_internals.metal): each construct compiles unchanged and
// computes what the stand-in documents, checked against plain C++.
#include <gtest/gtest.h>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

std::shared_ptr<const cpu::Module> compile_internals() {
  cpu::CompileOptions options;
  options.constants = {{0, cpu::parse_constant_value("false", "bool")}};
  return cpu::compile_file(kernel_file("metal_internals.metal"), options);
}

struct CopyCase {
  uint32_t src_x, src_y, dst_x, dst_y, clamp;
};

// What the 2-D copy leaves in the 12 x 8 tile: the documented rule, written
// here from the source matrix (10 columns), -1 where the copy does not write.
std::vector<float> expected_tile(const std::vector<float>& src, const CopyCase& c) {
  std::vector<float> tile(12 * 8, -1.0f);
  for (uint32_t y = 0; y < c.dst_y; ++y)
    for (uint32_t x = 0; x < c.dst_x; ++x) {
      float value = 0.0f;
      if (x < c.src_x && y < c.src_y)
        value = src[y * 10 + x];
      else if (c.clamp == 1)
        value = src[std::min(y, c.src_y - 1) * 10 + std::min(x, c.src_x - 1)];
      tile[y * 12 + x] = value;
    }
  for (uint32_t i = 0; i < 5; ++i) tile[12 * 7 + 6 + i] = src[95 + i];  // the 1-D copy
  return tile;
}

TEST(MetalInternals, SimdgroupAsyncCopiesFillTheDestinationTileByTheClampMode) {
  auto module = compile_internals();
  std::vector<float> src(100);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) + 0.25f;
  const CopyCase cases[] = {
      {8, 6, 8, 6, 0},    // the whole tile from the source
      {5, 3, 9, 7, 0},    // zero beyond the source tile
      {5, 3, 9, 7, 1},    // the nearest edge element beyond it
      {10, 7, 12, 7, 0},  // rows of 12 elements: 16-byte pieces and a tail
  };
  for (const CopyCase& c : cases) {
    std::vector<float> out(12 * 8, -7.0f), out_1d(1, 0.0f);
    std::vector<uint32_t> params = {c.src_x, c.src_y, c.dst_x, c.dst_y, c.clamp};
    auto result = run(*module, "async_copy_2d", {1, 1, 1}, {32, 1, 1},
                      {bind(0, src), bind(1, out), bind(2, params), bind(3, out_1d)}, {{0, 12 * 8 * sizeof(float)}});
    EXPECT_TRUE(IsClean(result));
    EXPECT_EQ(out, expected_tile(src, c)) << "src " << c.src_x << "x" << c.src_y << ", dst " << c.dst_x << "x"
                                          << c.dst_y << ", clamp " << c.clamp;
  }
}

// A lane's share of a copy is 16-byte pieces; a lane that reads a piece
// another lane copied is ordered with that write by the wait only.
TEST(MetalInternals, ReadingAnotherLanesPieceBeforeTheWaitIsARace) {
  std::vector<float> src(256);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
  for (bool wait : {true, false}) {
    cpu::CompileOptions options;
    options.constants = {{0, cpu::parse_constant_value("false", "bool")}};
    if (!wait) options.defines = {"MFAGEN_TEST_NO_WAIT"};
    auto module = cpu::compile_file(kernel_file("metal_internals.metal"), options);
    std::vector<float> out(32, -1.0f);
    auto result = run(*module, "async_copy_then_read", {1, 1, 1}, {32, 1, 1}, {bind(0, src), bind(1, out)},
                      {{0, 256 * sizeof(float)}});
    if (wait) {
      EXPECT_TRUE(IsClean(result));
      for (uint32_t lane = 0; lane < 32; ++lane) EXPECT_EQ(out[lane], float((lane * 8 + 100) % 256));
    } else {
      EXPECT_FALSE(IsClean(result)) << "no wait: the detectors must report the read";
    }
  }
}

TEST(MetalInternals, TheMultiplyBuiltinTakesHalfOperandsIntoAFloatAccumulator) {
  auto module = compile_internals();
  std::vector<uint16_t> a(64), b(64);
  std::vector<float> c(64), d(64, -1.0f);
  for (int i = 0; i < 64; ++i) {
    a[i] = to_half_bits((i % 7) * 0.375 - 1.0);
    b[i] = to_half_bits((i % 5) * 0.625 - 1.25);
    c[i] = float(i) * 0.0625f;
  }
  auto result = run(*module, "builtin_multiply", {1, 1, 1}, {32, 1, 1}, {bind(0, a), bind(1, b), bind(2, c), bind(3, d)});
  EXPECT_TRUE(IsClean(result));
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 8; ++col) {
      double sum = c[r * 8 + col];
      for (int k = 0; k < 8; ++k) sum += half_to_double(a[r * 8 + k]) * half_to_double(b[k * 8 + col]);
      // The operands are multiples of 1/8 and 1/16 below 2: every partial sum is exact in float.
      EXPECT_EQ(d[r * 8 + col], float(sum)) << "row " << r << " column " << col;
    }
}

}  // namespace
}  // namespace mfagen::cputest
