// Per-buffer traffic counters: bytes read and written through device
// pointers, counted exactly (threadgroup memory is not device traffic).
#include <gtest/gtest.h>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

const cpu::BufferTraffic* traffic_of(const cpu::LaunchResult& result, uint32_t index) {
  for (const cpu::BufferTraffic& t : result.traffic)
    if (t.index == index) return &t;
  return nullptr;
}

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i) * 0.5f;
  return v;
}

TEST(Traffic, CopyReadsAndWritesNFloats) {
  auto module = compile_kernel("copy.metal");
  const uint32_t n = 1000, threads = 64, groups = (n + threads - 1) / threads;  // 1024 threads
  std::vector<float> src = ramp(n), dst(n, -1.0f);
  uint32_t count = n;
  auto result = run(*module, "copy", {groups, 1, 1}, {threads, 1, 1}, {bind(0, src), bind(1, dst), bind_scalar(2, count)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(dst, src);
  ASSERT_EQ(result.traffic.size(), 3u);
  const auto* in = traffic_of(result, 0);
  const auto* out = traffic_of(result, 1);
  const auto* scalar = traffic_of(result, 2);
  ASSERT_TRUE(in && out && scalar);
  EXPECT_EQ(in->bytes_read, n * 4ull);
  EXPECT_EQ(in->bytes_written, 0u);
  EXPECT_EQ(out->bytes_read, 0u);
  EXPECT_EQ(out->bytes_written, n * 4ull);
  EXPECT_EQ(scalar->bytes_read, groups * threads * 4ull) << "every thread reads n once";
  EXPECT_EQ(scalar->bytes_written, 0u);
  EXPECT_EQ(result.device_bytes_read, in->bytes_read + scalar->bytes_read);
  EXPECT_EQ(result.device_bytes_written, n * 4ull);
}

TEST(Traffic, VectorCopyCountsSixteenBytesPerAccess) {
  auto module = compile_kernel("copy.metal");
  const uint32_t n = 1024;
  std::vector<float> src = ramp(n), dst(n, -1.0f);
  auto result = run(*module, "copy4", {n / 4 / 32, 1, 1}, {32, 1, 1}, {bind(0, src), bind(1, dst)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(dst, src);
  ASSERT_TRUE(traffic_of(result, 0) && traffic_of(result, 1));
  EXPECT_EQ(traffic_of(result, 0)->bytes_read, n * 4ull);
  EXPECT_EQ(traffic_of(result, 1)->bytes_written, n * 4ull);
  EXPECT_EQ(result.device_bytes_read, n * 4ull);
  EXPECT_EQ(result.device_bytes_written, n * 4ull);
}

TEST(Traffic, ThreadgroupStagingIsNotDeviceTraffic) {
  auto module = compile_kernel("copy.metal");
  const uint32_t n = 1000, threads = 256, groups = (n + threads - 1) / threads;
  std::vector<float> src = ramp(n), dst(n, -1.0f);
  uint32_t count = n;
  auto result =
      run(*module, "copy_staged", {groups, 1, 1}, {threads, 1, 1}, {bind(0, src), bind(1, dst), bind_scalar(2, count)});
  EXPECT_TRUE(IsClean(result));
  // Thread t of a threadgroup stores element threads-1-t of the staged
  // tile at the same position, so dst ends up equal to src.
  EXPECT_EQ(dst, src);
  ASSERT_TRUE(traffic_of(result, 0) && traffic_of(result, 1));
  EXPECT_EQ(traffic_of(result, 0)->bytes_read, n * 4ull);
  EXPECT_EQ(traffic_of(result, 1)->bytes_written, n * 4ull);
  EXPECT_EQ(traffic_of(result, 1)->bytes_read, 0u);
}

TEST(Traffic, UninstrumentedModuleHasNoCounters) {
  auto module = compile_kernel("copy.metal", {}, /*instrument=*/false);
  EXPECT_FALSE(module->instrumented());
  const uint32_t n = 256;
  std::vector<float> src = ramp(n), dst(n, -1.0f);
  uint32_t count = n;
  auto result = run(*module, "copy", {4, 1, 1}, {64, 1, 1}, {bind(0, src), bind(1, dst), bind_scalar(2, count)});
  EXPECT_EQ(dst, src);
  EXPECT_TRUE(result.traffic.empty());
  EXPECT_EQ(result.device_bytes_read, 0u);
}

}  // namespace
}  // namespace mfagen::cputest
