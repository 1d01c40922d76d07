// `?:` between one class type in different address spaces (valid MSL that
// C++ for OpenCL rejects) compiles through the conditional repair and gives
// Metal's values; compile_errors_test covers what must still be rejected.
#include <gtest/gtest.h>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

uint16_t bf(float f) { return to_bfloat_bits(f); }

TEST(AddressSpaceConditional, DeviceLvalueAgainstTemporary) {
  auto module = compile_kernel("address_space_conditional.metal");
  std::vector<uint16_t> src = {0x3f80, 0x4000, 0xc040, 0x7f80}, dst(8, 0xdead);
  uint32_t n = 4;
  auto result = run(*module, "pad_bfloat", {1, 1, 1}, {8, 1, 1}, {bind(0, src), bind(1, dst), bind_scalar(2, n)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(dst, (std::vector<uint16_t>{0x3f80, 0x4000, 0xc040, 0x7f80, 0, 0, 0, 0}));
}

TEST(AddressSpaceConditional, NestedInTemplateAgainstThreadgroupLvalue) {
  auto module = compile_kernel("address_space_conditional.metal");
  std::vector<uint16_t> src(8), dst(8, 0xdead);
  for (int i = 0; i < 8; ++i) src[i] = bf(float(i) + 0.5f);
  uint32_t n = 5;
  // Out-of-range device reads would be findings: only the chosen arm is evaluated.
  auto result = run(*module, "pick_bfloat", {1, 1, 1}, {8, 1, 1}, {bind(0, src), bind(1, dst), bind_scalar(2, n)});
  EXPECT_TRUE(IsClean(result));
  std::vector<uint16_t> expected(8);
  for (uint32_t i = 0; i < 8; ++i) {
    float v = i < n ? (i % 2 == 0 ? float(i) + 0.5f : float(i) * 10.0f) : (i == n ? 1.0f : float(i - n) + 0.5f);
    expected[i] = bf(v);
  }
  EXPECT_EQ(dst, expected);
}

TEST(AddressSpaceConditional, ConstantStructAndProgramScopeTable) {
  auto module = compile_kernel("address_space_conditional.metal");
  std::vector<float> pairs = {1.0f, 2.0f, 3.0f, 4.0f}, dst(3, -1.0f);
  auto result = run(*module, "pair_or_table", {3, 1, 1}, {1, 1, 1}, {bind(0, pairs), bind(1, dst)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(dst, (std::vector<float>{1 + 2 + 2, 3 + 4 - 3, 7 + 8 + 5}));
}

}  // namespace
}  // namespace mfagen::cputest
