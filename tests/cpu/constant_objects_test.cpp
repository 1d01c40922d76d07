// Class-type values in the `constant` address space (program-scope constants,
// static constexpr members) copy into thread memory, as MLX's Limits<> do.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mfagen/cpu/backend.h"

namespace cpu = mfagen::cpu;

TEST(ConstantObjects, BfloatConstantsCopyIntoThreadMemory) {
  auto module = cpu::compile_file(MFAGEN_TEST_DATA_DIR "/kernels/bfloat_constant.metal", {});
  std::vector<uint16_t> out(3, 0);
  cpu::LaunchOptions options;
  options.threadgroups = {1, 1, 1};
  options.threads_per_threadgroup = {3, 1, 1};
  options.buffers = {{0, std::as_writable_bytes(std::span(out))}};
  auto result = cpu::launch(*module, "k", options);
  EXPECT_TRUE(result.clean());
  auto widen = [](uint16_t bits) {
    uint32_t wide = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    return f;
  };
  EXPECT_EQ(widen(out[0]), -3.0f);
  EXPECT_EQ(widen(out[1]), -2.0f);
  EXPECT_EQ(widen(out[2]), -3.0f);
}
