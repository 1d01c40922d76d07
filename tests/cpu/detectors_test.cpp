// The seeded-bug suite: for every detector, small kernels with that bug
// (kernels/bugs/*.metal) must produce findings of the right kind at the
// right source line (the access for memory findings, the barrier for
// barrier divergence), and each correct twin in the same file must run clean
// and compute the right values. Lines are found by the `MARK:` comments in
// the kernel files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

using cpu::Finding;
using cpu::FindingKind;
using ::testing::HasSubstr;

std::filesystem::path bug_file(const std::string& name) { return kernel_file("bugs/" + name); }

std::shared_ptr<const cpu::Module> compile_bug(const std::string& name) {
  return compile_kernel("bugs/" + name);
}

std::string kind_name(FindingKind kind) { return std::string(cpu::to_string(kind)); }

// Every finding is of `kind`, in `kernel`, located at "FILE:LINE:" of
// `file` for one of `markers`; and there is at least one.
::testing::AssertionResult FindingsAt(const cpu::LaunchResult& result, FindingKind kind, const std::string& kernel,
                                      const std::string& file, std::vector<std::string> markers) {
  const std::string name = bug_file(file).filename().string();
  std::vector<std::string> places;
  for (const std::string& m : markers) places.push_back(name + ":" + std::to_string(line_of(bug_file(file), m)) + ":");
  if (result.findings.empty())
    return ::testing::AssertionFailure() << "no finding; expected " << kind_name(kind) << " at " << places[0];
  for (const Finding& f : result.findings) {
    bool at_place = false;
    for (const std::string& p : places) at_place |= f.location.find(p) != std::string::npos;
    if (f.kind != kind || !at_place || f.kernel != kernel)
      return ::testing::AssertionFailure() << "expected only " << kind_name(kind) << " findings in kernel " << kernel
                                           << " at " << ::testing::PrintToString(places) << "\n"
                                           << describe(result);
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> iota_floats(size_t n, float first = 1.0f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// One threadgroup of `threads` threads with these buffers, lanes in lockstep or not.
cpu::LaunchOptions one_threadgroup(uint32_t threads, std::vector<cpu::BufferBinding> buffers, bool lockstep) {
  cpu::LaunchOptions options;
  options.threadgroups = {1, 1, 1};
  options.threads_per_threadgroup = {threads, 1, 1};
  options.buffers = std::move(buffers);
  options.lockstep = lockstep;
  return options;
}

// ---- out of bounds ----

TEST(OutOfBounds, DeviceReadPastTheEnd) {
  auto module = compile_bug("oob_device_read.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "shift_left", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::out_of_bounds, "shift_left", "oob_device_read.metal", {"MARK: bug"}));
  EXPECT_EQ(result.findings_total, 1u) << "only the last thread reads x[64]";
  ASSERT_FALSE(result.findings.empty());
  const Finding& f = result.findings[0];
  EXPECT_EQ(f.threadgroup, (Dim3{1, 0, 0}));
  EXPECT_EQ(f.thread, (Dim3{31, 0, 0}));
  EXPECT_EQ(f.thread_index, 31u);
  EXPECT_THAT(f.region, HasSubstr("buffer(0)"));
  EXPECT_EQ(f.address % 4, 0u);
  for (int i = 0; i < 63; ++i) EXPECT_EQ(y[i], x[i + 1]) << i;
}

TEST(OutOfBounds, DeviceReadTwinIsClean) {
  auto module = compile_bug("oob_device_read.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  uint32_t n = 64;
  auto result = run(*module, "shift_left_checked", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y), bind_scalar(2, n)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 63; ++i) EXPECT_EQ(y[i], x[i + 1]) << i;
  EXPECT_EQ(y[63], 0.0f);
}

TEST(OutOfBounds, DeviceWriteByThreadsPastN) {
  auto module = compile_bug("oob_device_write.metal");
  std::vector<float> y(40, -1.0f);
  float value = 3.5f;
  auto result = run(*module, "fill", {2, 1, 1}, {32, 1, 1}, {bind(0, y), bind_scalar(1, value)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::out_of_bounds, "fill", "oob_device_write.metal", {"MARK: bug"}));
  EXPECT_EQ(result.findings_total, 24u) << "threads 40..63 each write past the end";
  ASSERT_FALSE(result.findings.empty());
  EXPECT_THAT(result.findings[0].detail, HasSubstr("write"));
  for (float v : y) EXPECT_EQ(v, 3.5f);
}

TEST(OutOfBounds, DeviceWriteTwinIsClean) {
  auto module = compile_bug("oob_device_write.metal");
  std::vector<float> y(40, -1.0f);
  float value = 3.5f;
  uint32_t n = 40;
  auto result = run(*module, "fill_checked", {2, 1, 1}, {32, 1, 1}, {bind(0, y), bind_scalar(1, value), bind_scalar(2, n)});
  EXPECT_TRUE(IsClean(result));
  for (float v : y) EXPECT_EQ(v, 3.5f);
}

TEST(OutOfBounds, ThreadgroupArrayIndexPastTheEnd) {
  auto module = compile_bug("oob_threadgroup.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "neighbour_sum", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(
      FindingsAt(result, FindingKind::out_of_bounds, "neighbour_sum", "oob_threadgroup.metal", {"MARK: bug"}));
  EXPECT_EQ(result.findings_total, 2u) << "thread 31 of each threadgroup reads tile[32]";
  ASSERT_FALSE(result.findings.empty());
  EXPECT_EQ(result.findings[0].thread, (Dim3{31, 0, 0}));
  EXPECT_THAT(result.findings[0].region, HasSubstr("tile"));
}

TEST(OutOfBounds, ThreadgroupTwinIsClean) {
  auto module = compile_bug("oob_threadgroup.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "neighbour_sum_wrapped", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], x[i] + x[(i / 32) * 32 + (i % 32 + 1) % 32]) << i;
}

TEST(OutOfBounds, ConstantBufferReadPastTheEnd) {
  auto module = compile_bug("oob_constant.metal");
  std::vector<float> x = iota_floats(35), c = {0.25f, 0.5f, 0.25f}, y(32, -1.0f);
  auto result = run(*module, "filter", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, c), bind(2, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::out_of_bounds, "filter", "oob_constant.metal", {"MARK: bug"}));
  EXPECT_EQ(result.findings_total, 32u) << "every thread reads c[3]";
  ASSERT_FALSE(result.findings.empty());
  EXPECT_THAT(result.findings[0].region, HasSubstr("buffer(1)"));
}

TEST(OutOfBounds, ConstantBufferTwinIsClean) {
  auto module = compile_bug("oob_constant.metal");
  std::vector<float> x = iota_floats(35), c = {0.25f, 0.5f, 0.25f}, y(32, -1.0f);
  auto result = run(*module, "filter_checked", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, c), bind(2, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.25f * x[i] + 0.5f * x[i + 1] + 0.25f * x[i + 2]) << i;
}

TEST(OutOfBounds, DetectorCanBeTurnedOff) {
  auto module = compile_bug("oob_device_read.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  cpu::LaunchOptions options;
  options.threadgroups = {2, 1, 1};
  options.threads_per_threadgroup = {32, 1, 1};
  options.buffers = {bind(0, x), bind(1, y)};
  options.detectors.out_of_bounds = false;
  auto result = cpu::launch(*module, "shift_left", options);
  EXPECT_TRUE(IsClean(result));
}

// An index that overshoots `a` must not silently land in the next array `b`:
// threadgroup allocations are separated by gaps at least as large as they are.
TEST(OutOfBounds, ThreadgroupIndexLandingInTheNextArray) {
  auto module = compile_bug("oob_threadgroup_far.metal");
  std::vector<float> y(32, -1.0f);
  auto result = run(*module, "skip_ahead", {1, 1, 1}, {32, 1, 1}, {bind(0, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::out_of_bounds, "skip_ahead", "oob_threadgroup_far.metal", {"MARK: bug"}));
  EXPECT_EQ(result.findings_total, 8u) << "threads 24..31 read a[32..39]";
}

TEST(OutOfBounds, ThreadgroupFarTwinIsClean) {
  auto module = compile_bug("oob_threadgroup_far.metal");
  std::vector<float> y(32, -1.0f);
  auto result = run(*module, "skip_ahead_wrapped", {1, 1, 1}, {32, 1, 1}, {bind(0, y)});
  EXPECT_TRUE(IsClean(result));
  for (float v : y) EXPECT_EQ(v, 3.0f);
}

// ---- data races ----

TEST(DataRace, NeighbourReadWithoutBarrier) {
  auto module = compile_bug("race_neighbour.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "swap_pairs", {1, 1, 1}, {64, 1, 1}, {bind(0, x), bind(1, y)});
  // The conflicting pair is a write and a read: either may be the access
  // that finds the other.
  EXPECT_TRUE(FindingsAt(result, FindingKind::data_race, "swap_pairs", "race_neighbour.metal",
                         {"MARK: write", "MARK: read"}));
  const std::string read_line = "race_neighbour.metal:" + std::to_string(line_of(bug_file("race_neighbour.metal"), "MARK: read")) + ":";
  bool at_read = false;
  for (const Finding& f : result.findings) at_read |= f.location.find(read_line) != std::string::npos;
  EXPECT_TRUE(at_read) << "thread 1 reads tile[0] that thread 0 wrote in the same interval\n" << describe(result);
}

TEST(DataRace, NeighbourReadTwinWithBarrierIsClean) {
  auto module = compile_bug("race_neighbour.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "swap_pairs_synchronized", {1, 1, 1}, {64, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], x[i ^ 1]) << i;
}

TEST(DataRace, TwoThreadsWriteTheSameWord) {
  auto module = compile_bug("race_same_word.metal");
  std::vector<float> x = iota_floats(64), y(32, -1.0f);
  auto result = run(*module, "pair_max", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::data_race, "pair_max", "race_same_word.metal", {"MARK: bug"}));
  ASSERT_FALSE(result.findings.empty());
  EXPECT_EQ(result.findings[0].thread_index % 2, 1u) << "the odd thread's write finds the even thread's";
}

TEST(DataRace, SameWordTwinWithOneWriterIsClean) {
  auto module = compile_bug("race_same_word.metal");
  std::vector<float> x = iota_floats(64), y(32, -1.0f);
  auto result = run(*module, "pair_max_one_writer", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int g = 0; g < 2; ++g)
    for (int k = 0; k < 16; ++k) EXPECT_EQ(y[g * 16 + k], std::max(x[g * 32 + 2 * k], x[g * 32 + 2 * k + 1]));
}

// A barrier with mem_flags::mem_device synchronizes execution but does not
// order threadgroup memory, so the exchange through `tile` is still a race.
TEST(DataRace, BarrierThatFencesOnlyDeviceMemory) {
  auto module = compile_bug("race_device_fence.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "swap_pairs_device_fence", {1, 1, 1}, {64, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::data_race, "swap_pairs_device_fence", "race_device_fence.metal",
                         {"MARK: bug"}));
}

TEST(DataRace, ThreadgroupFenceTwinIsClean) {
  auto module = compile_bug("race_device_fence.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "swap_pairs_threadgroup_fence", {1, 1, 1}, {64, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], x[i ^ 1]) << i;
}

// ggml's flash_attn_ext_vec (NE = 1) relies on a simdgroup's lanes running
// in lockstep: lane 0 overwrites words the other lanes read just before,
// with no barrier between (kernels/bugs/race_simd_lockstep.metal). The cpu
// backend runs lanes one after another between synchronization points, so
// lanes that run after lane 0 read its later write (on a GPU they would
// not): that difference must never be silent, the race detector reports it.
TEST(DataRace, SimdgroupLanesAssumedToRunInLockstep) {
  auto module = compile_bug("race_simd_lockstep.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "read_then_leader_writes", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  // Either access may find the other, as lanes run in turn.
  EXPECT_TRUE(FindingsAt(result, FindingKind::data_race, "read_then_leader_writes", "race_simd_lockstep.metal",
                         {"MARK: read", "MARK: write"}));
  EXPECT_EQ(y[0], 528.0f) << "lane 0 read before it wrote";
}

TEST(DataRace, LockstepTwinWithASimdgroupBarrierIsClean) {
  auto module = compile_bug("race_simd_lockstep.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "read_barrier_then_leader_writes", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 528.0f) << i;
}

// Lockstep lanes (LaunchOptions::lockstep), as a GPU runs a simdgroup: every
// lane reads before lane 0 writes, so every lane sums the 32 words; the race
// is still reported, because Metal's memory model does not order the accesses.
TEST(Lockstep, LanesReadBeforeTheLeaderWritesAsOnAGpu) {
  auto module = compile_bug("race_simd_lockstep.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = cpu::launch(*module, "read_then_leader_writes", one_threadgroup(32, {bind(0, x), bind(1, y)}, true));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 528.0f) << i;
  EXPECT_TRUE(FindingsAt(result, FindingKind::data_race, "read_then_leader_writes", "race_simd_lockstep.metal",
                         {"MARK: read", "MARK: write"}));
}

// Two simdgroups whose lanes each read the word their neighbour lane has just
// written: in lockstep every store of the instruction precedes every load, so
// each lane reads its neighbour's new word; by default lane 0 runs to its end
// first and reads a word lane 1 has not written (an uninitialized read).
TEST(Lockstep, EveryLaneSeesItsNeighboursStoreOfTheSameInstruction) {
  auto module = compile_bug("race_simd_lockstep.metal");
  std::vector<float> x = iota_floats(64);
  for (bool lockstep : {true, false}) {
    std::vector<float> y(64, -1.0f);
    auto result =
        cpu::launch(*module, "write_then_read_neighbour", one_threadgroup(64, {bind(0, x), bind(1, y)}, lockstep));
    if (!lockstep) {
      EXPECT_TRUE(std::any_of(result.findings.begin(), result.findings.end(),
                              [](const Finding& f) { return f.kind == FindingKind::uninitialized_read; }))
          << describe(result);
      continue;
    }
    EXPECT_TRUE(FindingsAt(result, FindingKind::data_race, "write_then_read_neighbour", "race_simd_lockstep.metal",
                           {"MARK: neighbour write", "MARK: neighbour read"}));
    for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], x[32 * (i / 32) + (i % 32 + 1) % 32]) << i;
  }
}

TEST(Lockstep, NeedsAnInstrumentedModule) {
  auto module = compile_kernel("bugs/race_simd_lockstep.metal", {}, /*instrument=*/false);
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  try {
    cpu::launch(*module, "read_then_leader_writes", one_threadgroup(32, {bind(0, x), bind(1, y)}, true));
    FAIL() << "lockstep ran without hooks";
  } catch (const cpu::LaunchError& e) {
    EXPECT_THAT(e.what(), HasSubstr("instrumentation"));
  }
}

// ---- barrier divergence ----

TEST(BarrierDivergence, EarlyReturnBeforeBarrier) {
  auto module = compile_bug("divergence_early_return.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "reverse_first_half", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::barrier_divergence, "reverse_first_half",
                         "divergence_early_return.metal", {"MARK: bug"}));
}

TEST(BarrierDivergence, EarlyReturnTwinIsClean) {
  auto module = compile_bug("divergence_early_return.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "reverse_first_half_uniform", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], x[15 - i]) << i;
  for (int i = 16; i < 32; ++i) EXPECT_EQ(y[i], -1.0f) << i;
}

TEST(BarrierDivergence, DifferentBarriersInIfAndElse) {
  auto module = compile_bug("divergence_if_else.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "exchange_halves", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::barrier_divergence, "exchange_halves", "divergence_if_else.metal",
                         {"MARK: then-barrier", "MARK: else-barrier"}));
}

TEST(BarrierDivergence, OneBarrierAfterIfElseIsClean) {
  auto module = compile_bug("divergence_if_else.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "exchange_halves_one_barrier", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], 2.0f * x[i + 16]) << i;
  for (int i = 16; i < 32; ++i) EXPECT_EQ(y[i], x[i - 16] + 1.0f) << i;
}

// ---- uninitialized threadgroup reads ----

TEST(UninitializedRead, TileNeverWritten) {
  auto module = compile_bug("uninit_never_written.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "reverse", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(FindingsAt(result, FindingKind::uninitialized_read, "reverse", "uninit_never_written.metal",
                         {"MARK: bug"}));
  EXPECT_EQ(result.findings_total, 64u) << "every thread of both threadgroups reads garbage";
}

TEST(UninitializedRead, StagedTwinIsClean) {
  auto module = compile_bug("uninit_never_written.metal");
  std::vector<float> x = iota_floats(64), y(64, -1.0f);
  auto result = run(*module, "reverse_staged", {2, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], x[(i / 32) * 32 + 31 - i % 32] + x[i]) << i;
}

TEST(UninitializedRead, HalfFilledTile) {
  auto module = compile_bug("uninit_half_filled.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "padded_copy", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(
      FindingsAt(result, FindingKind::uninitialized_read, "padded_copy", "uninit_half_filled.metal", {"MARK: bug"}));
  EXPECT_EQ(result.findings_total, 16u) << "threads 16..31 read elements nobody wrote";
  ASSERT_FALSE(result.findings.empty());
  EXPECT_EQ(result.findings[0].thread_index, 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], x[i]) << i;
}

TEST(UninitializedRead, ZeroFilledTwinIsClean) {
  auto module = compile_bug("uninit_half_filled.metal");
  std::vector<float> x = iota_floats(32), y(32, -1.0f);
  auto result = run(*module, "padded_copy_zero_filled", {1, 1, 1}, {32, 1, 1}, {bind(0, x), bind(1, y)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], i < 16 ? x[i] : 0.0f) << i;
}

}  // namespace
}  // namespace mfagen::cputest
