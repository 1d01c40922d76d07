// Templated kernels with [[host_name]] explicit instantiations (the way MLX
// declares its kernels) run through their instantiations' entry points.
#include <gtest/gtest.h>

#include <vector>

#include "mfagen/cpu/backend.h"

namespace cpu = mfagen::cpu;

TEST(TemplatedKernels, EachHostNamedInstantiationIsAnEntryPoint) {
  auto module = cpu::compile_file(MFAGEN_TEST_DATA_DIR "/kernels/templated_scale.metal", {});
  ASSERT_NE(module->find("scale_f32"), nullptr);
  ASSERT_NE(module->find("scale_f16"), nullptr);
  EXPECT_EQ(module->find("scale_f16")->params[0].type, "device half*");

  std::vector<float> a(64), s{0.25f};
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i);
  cpu::LaunchOptions options;
  options.threadgroups = {2, 1, 1};
  options.threads_per_threadgroup = {32, 1, 1};
  options.buffers = {{0, std::as_writable_bytes(std::span(a))}, {1, std::as_writable_bytes(std::span(s))}};
  auto result = cpu::launch(*module, "scale_f32", options);
  EXPECT_TRUE(result.clean());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], float(i) * 0.25f * 2) << i;  // N = 2

  std::vector<_Float16> h(32);
  for (size_t i = 0; i < h.size(); ++i) h[i] = _Float16(float(i));
  options.threadgroups = {1, 1, 1};
  options.buffers = {{0, std::as_writable_bytes(std::span(h))}, {1, std::as_writable_bytes(std::span(s))}};
  result = cpu::launch(*module, "scale_f16", options);
  EXPECT_TRUE(result.clean());
  for (size_t i = 0; i < h.size(); ++i) EXPECT_EQ(float(h[i]), float(_Float16(float(i) * 0.25f * 3))) << i;  // N = 3
}
