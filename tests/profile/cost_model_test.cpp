// The cost model (generator/profile/cost_model.h, docs/cost_model.md): its
// monotonicity, its bounds, occupancy, the last wave's tail and one case
// computed by hand from the chip's own constants.
#include "profile/cost_model.h"
#include "profile/latency_hiding.h"
#include "profile/load_latency.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace mfagen::profile {
namespace {

using cpu::profile::kOpCount;

double& at(OpCounts& ops, Op o) { return ops[static_cast<uint32_t>(o)]; }

// A launch of `threadgroups` threadgroups of 128 threads (4 simdgroups) with
// 8 KB of threadgroup memory, each doing `per_threadgroup` ops (classes left
// empty: the model spreads launch.ops evenly).
LaunchWork launch(uint64_t threadgroups, const OpCounts& per_threadgroup) {
  LaunchWork l;
  l.kernel = "synthetic";
  l.grid[0] = static_cast<uint32_t>(threadgroups);
  l.threads_per_threadgroup = 128;
  l.simdgroups_per_threadgroup = 4;
  l.threadgroup_memory_bytes = 8192;
  l.threadgroups = threadgroups;
  l.threadgroups_run = threadgroups;
  for (uint32_t i = 0; i < kOpCount; ++i) l.ops[i] = per_threadgroup[i] * static_cast<double>(threadgroups);
  return l;
}

KernelWork kernel(std::vector<LaunchWork> launches) {
  KernelWork k;
  k.name = "synthetic";
  k.launches = std::move(launches);
  return k;
}

// A compute-heavy threadgroup: FMAs, some exp2 and a few loads.
OpCounts mixed_ops() {
  OpCounts ops{};
  at(ops, Op::f32_fma) = 4000;
  at(ops, Op::f32_add) = 500;
  at(ops, Op::exp2) = 200;
  at(ops, Op::device_load) = 100;
  at(ops, Op::mma_f16_f32) = 64;
  return ops;
}

double seconds(const Chip& c, const LaunchWork& l) { return predict(c, kernel({l})).seconds; }

TEST(CostModel, MoreOpsOfAnyKindNeverLessTime) {
  for (const Chip& c : chips()) {
    SCOPED_TRACE(c.name);
    const LaunchWork base = launch(1000, mixed_ops());
    const double t0 = seconds(c, base);
    ASSERT_GT(t0, 0);
    for (uint32_t i = 0; i < kOpCount; ++i) {
      SCOPED_TRACE(std::string(cpu::profile::kOpNames[i]));
      OpCounts more = mixed_ops();
      more[i] += 1000;
      EXPECT_GE(seconds(c, launch(1000, more)), t0);
    }
    // Kinds that take issue slots make a compute-bound launch strictly longer
    // (integer and FP16 work only where it does not co-issue beside FP32).
    std::vector<Op> issued = {Op::f32_fma, Op::device_load, Op::threadgroup_barrier, Op::simd_reduce, Op::mma_f32_f32,
                              Op::exp2, Op::tensor_mma_f16, Op::tensor_mma_f32, Op::tensor_mma_i8};
    if (c.int_fp16_coissue == 0) issued.insert(issued.end(), {Op::f16_add, Op::int_mul, Op::address});
    for (Op o : issued) {
      OpCounts more = mixed_ops();
      at(more, o) += 1000;
      EXPECT_GT(seconds(c, launch(1000, more)), t0) << cpu::profile::name(o);
    }
  }
}

TEST(CostModel, MoreDeviceBytesNeverLessTime) {
  const Chip& c = find_chip("M2 Max");
  LaunchWork l = launch(1000, mixed_ops());
  double previous = seconds(c, l);
  for (uint64_t bytes : {1ull << 20, 1ull << 26, 1ull << 30, 1ull << 34}) {
    l.device_bytes_unique = bytes;
    l.device_bytes_read = bytes;
    const double t = seconds(c, l);
    EXPECT_GE(t, previous) << bytes;
    previous = t;
    l.device_bytes_read = 4 * bytes;  // re-reads through the cache
    EXPECT_GE(seconds(c, l), t) << bytes;
  }
  EXPECT_GT(previous, seconds(c, launch(1000, mixed_ops())));  // 16 GB is memory bound
}

// Requested bytes that a threadgroup re-reads hit its core's L1: only the
// bytes past L1 are charged at the cache's bandwidth; a launch that did not
// measure them charges every requested byte there, as before.
TEST(CostModel, ReReadsWithinAThreadgroupAreL1Hits) {
  const Chip& c = find_chip("M4 Max");
  OpCounts ops{};
  at(ops, Op::device_load) = 64;
  LaunchWork l = launch(4096, ops);
  l.device_bytes_unique = 1ull << 26;
  l.device_bytes_read = 1ull << 34;
  const LaunchPrediction unmeasured = predict(c, kernel({l})).launches.at(0);
  EXPECT_DOUBLE_EQ(unmeasured.device_memory_seconds, (1ull << 34) / (c.cache_bandwidth_gbs * 1e9));
  l.device_bytes_read_past_l1 = 1ull << 30;
  const LaunchPrediction measured = predict(c, kernel({l})).launches.at(0);
  EXPECT_DOUBLE_EQ(measured.device_memory_seconds, (1ull << 30) / (c.cache_bandwidth_gbs * 1e9));
  l.device_bytes_read_past_l1 = 1ull << 20;  // below the compulsory bytes: DRAM bounds it
  EXPECT_DOUBLE_EQ(predict(c, kernel({l})).launches.at(0).device_memory_seconds,
                   (1ull << 26) / (streaming_dram_bandwidth_gbs(c) * 1e9));
}

TEST(CostModel, MoreDramBandwidthNeverMoreTime) {
  for (const Chip& c : chips()) {
    LaunchWork memory = launch(1000, mixed_ops());
    memory.device_bytes_unique = 1ull << 32;
    memory.device_bytes_read = 1ull << 32;
    const LaunchWork compute = launch(1000, mixed_ops());
    Chip faster = c;
    faster.dram_bandwidth_gbs *= 2;
    EXPECT_LT(seconds(faster, memory), seconds(c, memory)) << c.name;
    EXPECT_LE(seconds(faster, compute), seconds(c, compute)) << c.name;
  }
}

TEST(CostModel, MoreCoresNeverMoreTime) {
  for (const Chip& c : chips()) {
    for (uint64_t threadgroups : {1ull, 7ull, 100ull, 1001ull, 20000ull}) {
      const LaunchWork l = launch(threadgroups, mixed_ops());
      double previous = seconds(c, l);
      Chip bigger = c;
      for (int extra = 1; extra <= 40; extra += 3) {
        bigger.gpu_cores = c.gpu_cores + extra;
        const double t = seconds(bigger, l);
        EXPECT_LE(t, previous) << c.name << " threadgroups " << threadgroups << " cores " << bigger.gpu_cores;
        previous = t;
      }
    }
  }
}

TEST(CostModel, MemoryHeavyLaunchIsDeviceMemoryBound) {
  OpCounts ops{};
  at(ops, Op::device_load) = 64;
  at(ops, Op::f32_add) = 64;
  LaunchWork l = launch(4096, ops);
  l.device_bytes_unique = 1ull << 31;
  l.device_bytes_read = 1ull << 30;
  l.device_bytes_written = 1ull << 30;
  for (const Chip& c : chips()) {
    const Prediction p = predict(c, kernel({l}));
    EXPECT_EQ(p.bound, Bound::device_memory) << c.name;
    // At the streaming rate, not the advertised one: utilization (of the
    // advertised figure) tops out at the measured streaming share.
    EXPECT_DOUBLE_EQ(p.seconds, (1ull << 31) / (0.85 * c.dram_bandwidth_gbs * 1e9)) << c.name;
    EXPECT_NEAR(p.bandwidth_utilization, 0.85, 1e-12) << c.name;
  }
}

TEST(CostModel, MmaHeavyLaunchIsMatrixBound) {
  OpCounts ops{};
  at(ops, Op::mma_f16_f32) = 4096;
  at(ops, Op::sgm_load_threadgroup) = 512;
  at(ops, Op::f32_fma) = 256;
  const LaunchWork l = launch(2048, ops);
  for (const Chip& c : chips()) {
    const LaunchPrediction p = predict(c, kernel({l})).launches.at(0);
    EXPECT_EQ(p.bound, Bound::matrix) << c.name;
    EXPECT_GT(p.matrix_seconds, 0.5 * p.compute_seconds) << c.name;
    EXPECT_DOUBLE_EQ(p.seconds, p.compute_seconds) << c.name;
  }
}

TEST(CostModel, Exp2HeavyLaunchIsTranscendentalBound) {
  OpCounts ops{};
  at(ops, Op::exp2) = 4000;
  at(ops, Op::f32_fma) = 4000;
  const LaunchWork l = launch(2048, ops);
  for (const Chip& c : chips()) {
    const LaunchPrediction p = predict(c, kernel({l})).launches.at(0);
    EXPECT_EQ(p.bound, Bound::transcendental) << c.name;
    EXPECT_GT(p.transcendental_seconds, p.compute_seconds) << c.name;
  }
}

TEST(CostModel, ThreadgroupMemoryHeavyLaunchIsThreadgroupMemoryBound) {
  OpCounts ops{};
  at(ops, Op::threadgroup_load) = 100;
  LaunchWork l = launch(1024, ops);
  l.threadgroup_bytes_read = 1ull << 34;
  const Chip& c = find_chip("M1 Max");
  const LaunchPrediction p = predict(c, kernel({l})).launches.at(0);
  EXPECT_EQ(p.bound, Bound::threadgroup_memory);
  EXPECT_DOUBLE_EQ(p.seconds,
                   (1ull << 34) / (c.threadgroup_bandwidth_bytes_per_cycle_per_core * c.gpu_cores * c.clock_ghz * 1e9));
}

TEST(CostModel, OneSimdgroupPerCoreIsLatencyBound) {
  LaunchWork l = launch(4096, mixed_ops());
  l.threads_per_threadgroup = 32;
  l.simdgroups_per_threadgroup = 1;
  l.threadgroup_memory_bytes = 32768;  // one resident threadgroup per core
  const LaunchPrediction p = predict(find_chip("M1"), kernel({l})).launches.at(0);
  EXPECT_EQ(p.threadgroups_per_core, 1u);
  // metal-benchmarks' ILP-4 FFMA table: 2.75 cycles at 4 simds/core, so a
  // quarter of that occupancy reaches 1.02 / 2.75 / 4 of the issue rate.
  EXPECT_DOUBLE_EQ(p.latency_hiding, 1.02 / 2.75 / 4);
  EXPECT_EQ(p.bound, Bound::latency);
}

TEST(LoadLatency, MeanLatencyWeighsWhereTheBytesAreServed) {
  const Chip& c = find_chip("M1");
  LaunchWork l = launch(1, OpCounts{});
  l.device_bytes_read = 1000;
  l.device_bytes_read_past_l1 = 500;  // 500 bytes are L1 hits
  l.device_bytes_unique = 200;        // 200 come from DRAM, 300 from L2
  const double ns = (500 * c.l1_latency_ns + 300 * c.l2_latency_ns + 200 * c.dram_latency_ns) / 1000;
  EXPECT_DOUBLE_EQ(mean_load_latency_seconds(c, l), ns * 1e-9);
  // Chips and Cheese's M1 figures.
  EXPECT_DOUBLE_EQ(c.l1_latency_ns, 43);
  EXPECT_DOUBLE_EQ(c.l2_latency_ns, 76.3);
  EXPECT_DOUBLE_EQ(c.dram_latency_ns, 311);
  // Without the L1 measurement every byte misses L1.
  l.device_bytes_read_past_l1 = 0;
  EXPECT_DOUBLE_EQ(mean_load_latency_seconds(c, l), (800 * c.l2_latency_ns + 200 * c.dram_latency_ns) / 1000 * 1e-9);
  // Loads wait in groups of kLoadsInFlightPerSimdgroup.
  OpCounts ops{};
  at(ops, Op::device_load) = 6;
  at(ops, Op::sgm_load_device) = 2;
  EXPECT_DOUBLE_EQ(load_wait_seconds(ops, 1e-7), 8 / kLoadsInFlightPerSimdgroup * 1e-7);
}

// One threadgroup of four simdgroups per core walks a long loop of loads: its
// simdgroups' own chains (instructions at a lone simdgroup's rate plus their
// load waits) set its time. With many threadgroups resident the core's shared
// issue rate is longer and the waits are hidden.
TEST(LoadLatency, LoadWaitsBoundALoneThreadgroupAndHideUnderOccupancy) {
  const Chip& c = find_chip("M1 Max");
  OpCounts per_tg{};
  at(per_tg, Op::f32_fma) = 4 * 2000;
  at(per_tg, Op::device_load) = 4 * 500;
  LaunchWork alone = launch(static_cast<uint64_t>(c.gpu_cores), per_tg);
  alone.threadgroup_memory_bytes = 40000;  // one threadgroup per core
  alone.device_bytes_read = alone.device_bytes_unique = 1 << 20;  // compulsory: DRAM latency
  const LaunchPrediction p = predict(c, kernel({alone})).launches.at(0);
  ASSERT_EQ(p.threadgroups_per_core, 1u);
  const double own = (2000 + 500) / alu_latency_hiding(c, c.schedulers_per_core) / (c.clock_ghz * 1e9);
  const double waits = 500 / kLoadsInFlightPerSimdgroup * c.dram_latency_ns * 1e-9;
  EXPECT_NEAR(p.seconds, own + waits, 1e-9 * p.seconds);
  EXPECT_EQ(p.bound, Bound::latency);

  // Fewer loads at full occupancy: the waits vanish behind the other
  // simdgroups' instructions (Little's law: 28 simdgroups x 4 loads in flight
  // cover a DRAM latency per 5 loads of 2000 FMAs).
  at(per_tg, Op::device_load) = 4 * 20;
  Chip no_latency = c;
  no_latency.l1_latency_ns = no_latency.l2_latency_ns = no_latency.dram_latency_ns = 0;
  LaunchWork busy = launch(static_cast<uint64_t>(c.gpu_cores) * 7 * 50, per_tg);
  busy.device_bytes_read = busy.device_bytes_unique = 1 << 20;
  ASSERT_EQ(occupancy(c, busy).threadgroups_per_core, 7u);  // 7 x 8 KB of threadgroup memory
  EXPECT_DOUBLE_EQ(predict(c, kernel({busy})).seconds, predict(no_latency, kernel({busy})).seconds);
  // ... but not when there is only one threadgroup per core.
  LaunchWork lone = busy;
  lone.threadgroup_memory_bytes = 40000;
  EXPECT_GT(predict(c, kernel({lone})).seconds, predict(no_latency, kernel({lone})).seconds);
}

TEST(CostModel, OneThreadgroupMoreThanAFullWaveTakesLonger) {
  for (const Chip& c : chips()) {
    const LaunchWork probe = launch(1, mixed_ops());
    const uint64_t slots = static_cast<uint64_t>(c.gpu_cores) * occupancy(c, probe).threadgroups_per_core;
    const LaunchPrediction full = predict(c, kernel({launch(slots, mixed_ops())})).launches.at(0);
    const LaunchPrediction tail = predict(c, kernel({launch(slots + 1, mixed_ops())})).launches.at(0);
    EXPECT_DOUBLE_EQ(full.waves, 1.0) << c.name;
    EXPECT_GT(tail.waves, 1.0) << c.name;
    // The extra threadgroup runs alone in a second wave, as fast as one
    // threadgroup alone on the chip: it has its core's whole issue rate, at
    // the latency hiding one threadgroup's simdgroups reach.
    const LaunchPrediction alone = predict(c, kernel({launch(1, mixed_ops())})).launches.at(0);
    EXPECT_NEAR(tail.seconds, full.seconds + alone.seconds, 1e-12 * tail.seconds) << c.name;
    if (occupancy(c, probe).threadgroups_per_core > 1) EXPECT_LT(tail.seconds, 2 * full.seconds) << c.name;
  }
}

TEST(Occupancy, LimitedByThreadgroupMemoryWhenLarge) {
  for (const Chip& c : chips()) {
    LaunchWork l = launch(100, mixed_ops());
    l.threadgroup_memory_bytes = 32768;
    const Occupancy o = occupancy(c, l);
    if (c.dynamic_caching > 0) {
      // Apple9+: one on-chip pool for registers and threadgroup memory.
      EXPECT_EQ(o.limit, "on-chip memory (registers + threadgroup memory)") << c.name;
      EXPECT_EQ(o.threadgroups_per_core,
                static_cast<uint32_t>((c.threadgroup_memory_bytes_per_core + c.register_file_bytes_per_core) / 32768));
    } else {
      EXPECT_EQ(o.limit, "threadgroup memory") << c.name;
      EXPECT_EQ(o.threadgroups_per_core, static_cast<uint32_t>(c.threadgroup_memory_bytes_per_core / 32768));
    }
    EXPECT_DOUBLE_EQ(o.simdgroups_per_core, 4.0 * o.threadgroups_per_core);
    EXPECT_DOUBLE_EQ(o.latency_hiding, alu_latency_hiding(c, o.simdgroups_per_core));
  }
}

// A launch whose threadgroup memory (1 KB) never limits residency, so that
// threads and registers do.
LaunchWork light_memory_launch(uint32_t threads, uint32_t registers) {
  LaunchWork l = launch(100, mixed_ops());
  l.threadgroup_memory_bytes = 1024;
  l.threads_per_threadgroup = threads;
  l.simdgroups_per_threadgroup = threads / 32;
  l.registers_per_thread = registers;
  return l;
}

// Apple7/8 allocate registers statically: Asahi's table (half-registers ->
// threads per core) sets residency, with no floor at the saturation point.
TEST(Occupancy, RegistersLimitResidencyThroughAsahisTableOnApple7) {
  const Chip& c = find_chip("M1 Max");
  ASSERT_EQ(c.dynamic_caching, 0);
  // 112 registers = 224 half-registers -> 448 threads: one 256-thread threadgroup (8 simdgroups).
  Occupancy o = occupancy(c, light_memory_launch(256, 112));
  EXPECT_EQ(o.limit, "registers");
  EXPECT_EQ(register_limited_threads_per_core(c, 112), 448u);
  EXPECT_EQ(o.threadgroups_per_core, 1u);
  EXPECT_DOUBLE_EQ(o.simdgroups_per_core, 8);
  // 64 registers = 128 half-registers -> 832 threads: three 256-thread threadgroups.
  o = occupancy(c, light_memory_launch(256, 64));
  EXPECT_EQ(o.threadgroups_per_core, 3u);
  // At 52 registers or fewer the register file itself: 208 KB / (4 x 32) threads.
  EXPECT_EQ(register_limited_threads_per_core(c, 32), static_cast<uint32_t>(c.register_file_bytes_per_core / 128));
  // Unstated registers do not limit: threads do (3072 / 1024).
  o = occupancy(c, light_memory_launch(1024, 0));
  EXPECT_EQ(o.limit, "threads");
  EXPECT_EQ(o.threadgroups_per_core, static_cast<uint32_t>(c.max_threads_per_core / 1024));
  // Past 128 registers the kernel spills and keeps the 128-register residency (384 threads).
  EXPECT_EQ(occupancy(c, light_memory_launch(128, 200)).threadgroups_per_core, 3u);
}

// Apple9+ (Dynamic Caching): registers and threadgroup memory share the pool.
TEST(Occupancy, RegistersAndThreadgroupMemoryShareOnePoolOnApple9) {
  const Chip& c = find_chip("M3 Max");
  ASSERT_GT(c.dynamic_caching, 0);
  LaunchWork l = light_memory_launch(256, 112);
  l.threadgroup_memory_bytes = 20480;
  const Occupancy o = occupancy(c, l);
  const double pool = c.register_file_bytes_per_core + c.threadgroup_memory_bytes_per_core;
  EXPECT_EQ(o.threadgroups_per_core, static_cast<uint32_t>(pool / (20480 + 4.0 * 112 * 256)));
  EXPECT_EQ(o.limit, "on-chip memory (registers + threadgroup memory)");
  // A threadgroup-memory-heavy, register-light kernel fits more than 60 KB / tg bytes.
  l.registers_per_thread = 0;
  l.threadgroup_memory_bytes = 30000;
  EXPECT_GT(occupancy(c, l).threadgroups_per_core, static_cast<uint32_t>(c.threadgroup_memory_bytes_per_core / 30000));
}

// metal-benchmarks: MMA latency ~36 cycles against ~18 of throughput, so a
// scheduler needs two MMAs in flight: simdgroups per scheduler x chains.
TEST(LatencyHiding, MmaChainsAndResidency) {
  const Chip& c = find_chip("M1 Max");
  ASSERT_EQ(c.mma_latency_cycles, 36);
  ASSERT_EQ(c.schedulers_per_core, 4);
  EXPECT_DOUBLE_EQ(mma_latency_hiding(c, 4, 1), 0.5);   // 1 simdgroup per scheduler, 1 chain
  EXPECT_DOUBLE_EQ(mma_latency_hiding(c, 4, 4), 1.0);
  EXPECT_DOUBLE_EQ(mma_latency_hiding(c, 8, 1), 1.0);   // two simdgroups per scheduler
  EXPECT_DOUBLE_EQ(mma_latency_hiding(c, 16, 1), 1.0);
  EXPECT_DOUBLE_EQ(mma_latency_hiding(c, 24, 4), 1.0);
  EXPECT_DOUBLE_EQ(mma_latency_hiding(c, 2, 1), 0.25);
  // ALU work: the ILP-4 FFMA table (2.75 / 1.60 / 1.02 cycles at 4 / 8 / 88 simds per core).
  EXPECT_DOUBLE_EQ(alu_latency_hiding(find_chip("M1 Max"), 4), 1.02 / 2.75);
  EXPECT_DOUBLE_EQ(alu_latency_hiding(find_chip("M1 Max"), 8), 1.02 / 1.60);
  EXPECT_DOUBLE_EQ(alu_latency_hiding(find_chip("M1 Max"), 16), 1.02 / (1.60 + 0.5 * (1.02 - 1.60)));
  EXPECT_DOUBLE_EQ(alu_latency_hiding(find_chip("M1 Max"), 24), 1.0);
  EXPECT_DOUBLE_EQ(alu_latency_hiding(find_chip("M1 Max"), 48), 1.0);

  // The same MMA-only launch at 8 resident simdgroups: one chain per
  // simdgroup hides the MMA latency there, and so do four.
  OpCounts ops{};
  at(ops, Op::mma_f32_f32) = 1000;
  LaunchWork l = light_memory_launch(256, 112);  // one 8-simdgroup threadgroup per core on M1 Max
  l.threadgroups = l.grid[0] = 32;
  for (uint32_t i = 0; i < kOpCount; ++i) l.ops[i] = ops[i] * 32;
  l.mma_chains = 1;
  const double one_chain = seconds(c, l);
  l.mma_chains = 4;
  EXPECT_DOUBLE_EQ(seconds(c, l), one_chain);
  // At 4 resident simdgroups one chain leaves half the MMA rate.
  LaunchWork small = l;
  small.threads_per_threadgroup = 128;
  small.simdgroups_per_threadgroup = 4;
  small.threadgroup_memory_bytes = 40000;  // one per core
  small.registers_per_thread = 0;
  small.mma_chains = 1;
  const double half_rate = seconds(c, small);
  small.mma_chains = 4;
  EXPECT_NEAR(half_rate, 2 * seconds(c, small), 1e-12 * half_rate);
}

// Registers past the 128 a thread has are spilled: the ALU work is charged
// the spilled fraction again; at 128 or fewer nothing.
TEST(CostModel, RegistersPast128AreChargedAsSpills) {
  const Chip& c = find_chip("M3 Max");
  LaunchWork l = light_memory_launch(128, 128);
  l.threadgroups = l.grid[0] = 40;
  OpCounts ops{};
  at(ops, Op::f32_fma) = 4000;
  for (uint32_t i = 0; i < kOpCount; ++i) l.ops[i] = ops[i] * 40;
  l.threadgroup_memory_bytes = 65536;  // one per core whatever the registers
  const double at_limit = seconds(c, l);
  l.registers_per_thread = 140;
  EXPECT_NEAR(seconds(c, l), at_limit * (1 + 12.0 / 140), 1e-12 * at_limit);
}

// bfloat -> float is a shift on Apple7/8 and free on Apple9+;
// simdgroup_barrier costs nothing anywhere (no such G13 instruction).
TEST(CostModel, BfloatWideningPerGenerationAndFreeSimdgroupBarriers) {
  OpCounts widen{};
  at(widen, Op::widen_bf16) = 100;
  EXPECT_DOUBLE_EQ(threadgroup_cycles(find_chip("M1 Max"), widen).issue, 100);
  EXPECT_DOUBLE_EQ(threadgroup_cycles(find_chip("M2 Max"), widen).issue, 100);
  EXPECT_DOUBLE_EQ(threadgroup_cycles(find_chip("M3 Max"), widen).issue, 0);
  EXPECT_DOUBLE_EQ(threadgroup_cycles(find_chip("M5"), widen).issue, 0);
  OpCounts barrier{};
  at(barrier, Op::simdgroup_barrier) = 100;
  for (const Chip& c : chips()) EXPECT_DOUBLE_EQ(threadgroup_cycles(c, barrier).issue, 0) << c.name;
}

// Apple9+ issue integer and FP16 instructions beside FP32: integer work
// smaller than the FP32 work adds no time there, and all of it on Apple7/8.
TEST(CostModel, IntegerAndHalfWorkCoIssueOnApple9) {
  OpCounts fp32{};
  at(fp32, Op::f32_fma) = 4000;
  OpCounts mixed = fp32;
  at(mixed, Op::int_add) = 1000;
  at(mixed, Op::f16_add) = 1000;
  for (const char* name : {"M3 Max", "M4 Max"}) {
    const Chip& c = find_chip(name);
    EXPECT_DOUBLE_EQ(seconds(c, launch(4000, mixed)), seconds(c, launch(4000, fp32))) << name;
  }
  const Chip& m1 = find_chip("M1 Max");
  EXPECT_NEAR(seconds(m1, launch(4000, mixed)), 1.5 * seconds(m1, launch(4000, fp32)),
              1e-9 * seconds(m1, launch(4000, fp32)));
  // Co-issue is at most two instructions per cycle: equal streams take half their sum.
  OpCounts even{};
  at(even, Op::f32_fma) = 1000;
  at(even, Op::int_add) = 1000;
  ThreadgroupCycles t = threadgroup_cycles(find_chip("M3 Max"), even);
  EXPECT_DOUBLE_EQ(t.integer, 1000);
  EXPECT_DOUBLE_EQ(t.issue, 2000);
  EXPECT_DOUBLE_EQ(seconds(find_chip("M3 Max"), launch(4000, even)), seconds(find_chip("M3 Max"), launch(4000, fp32)) / 4);
}

// 40 x 1 threadgroups on a 40-core M3 Max, computed from the chip's constants.
TEST(CostModel, HandComputedCase) {
  const Chip& c = find_chip("M3 Max");
  OpCounts per_tg{};
  at(per_tg, Op::f32_fma) = 4 * 1000;  // 1000 per simdgroup
  at(per_tg, Op::exp2) = 4 * 25;
  at(per_tg, Op::f16_mul) = 4 * 50;
  LaunchWork l = launch(40, per_tg);
  l.threadgroup_memory_bytes = 16384;
  l.device_bytes_unique = 40 * 4096;
  l.device_bytes_read = 40 * 4096;

  // Residency: the on-chip pool (Dynamic Caching) holds floor(pool / 16 KB)
  // threadgroups, threads allow more; registers are unstated.
  ASSERT_GT(c.dynamic_caching, 0);
  const double per_core =
      std::floor((c.threadgroup_memory_bytes_per_core + c.register_file_bytes_per_core) / 16384);
  ASSERT_LT(per_core, c.max_threads_per_core / 128);
  // 40 threadgroups fit in one partial wave of gpu_cores * per_core slots:
  // one threadgroup per core, which gets its core's 4 schedulers at the
  // latency hiding of 4 resident simdgroups (ILP-4 table: 1.02 / 2.75).
  ASSERT_LE(40, c.gpu_cores * per_core);
  ASSERT_EQ(c.gpu_cores, 40);
  const double hiding = 1.02 / 2.75;
  const double issue_cycles = 4000 + 100 + 200;  // FMAs, exp2 issue slots, half multiplies
  // FP16 multiplies co-issue beside the FP32 work on Apple9: max(4100, 200, 4300 / 2).
  const double alu_cycles = c.int_fp16_coissue > 0 ? 4000 + 100 : issue_cycles;
  const double pipe_cycles = 100 * c.transcendental_cycles;
  const double rate = c.schedulers_per_core * hiding;  // instructions per cycle
  const double expected = std::max(alu_cycles, pipe_cycles) / rate / (c.clock_ghz * 1e9);

  const Prediction p = predict(c, kernel({l}));
  ASSERT_EQ(p.launches.size(), 1u);
  const LaunchPrediction& lp = p.launches[0];
  EXPECT_EQ(lp.threadgroups_per_core, static_cast<uint32_t>(per_core));
  EXPECT_EQ(lp.occupancy_limit, "on-chip memory (registers + threadgroup memory)");
  EXPECT_DOUBLE_EQ(lp.latency_hiding, alu_latency_hiding(c, per_core * 4));
  EXPECT_DOUBLE_EQ(lp.waves, 40 / (c.gpu_cores * per_core));
  EXPECT_NEAR(lp.seconds, expected, 1e-12 * expected);
  EXPECT_NEAR(p.seconds, expected, 1e-12 * expected);
  EXPECT_NEAR(lp.transcendental_seconds, pipe_cycles / rate / (c.clock_ghz * 1e9), 1e-12 * expected);
  EXPECT_DOUBLE_EQ(lp.matrix_seconds, 0);
  EXPECT_DOUBLE_EQ(lp.device_memory_seconds, 40 * 4096 / (streaming_dram_bandwidth_gbs(c) * 1e9));
  // No useful FLOPs given: counted FLOPs (2 per FMA, 1 per multiply) over the FP32 peak.
  const double flops = 40 * (2 * 4000 + 200);
  EXPECT_NEAR(p.tflops, flops / expected / 1e12, 1e-9);
  EXPECT_NEAR(p.utilization,
              flops / expected / (c.gpu_cores * c.fp32_lanes_per_core_per_cycle * 2 * c.clock_ghz * 1e9), 1e-9);
  EXPECT_NEAR(p.bandwidth_gbs, 40 * 4096 / expected / 1e9, 1e-9 * p.bandwidth_gbs);
}

TEST(CostModel, LaunchesAddUpAndTheLongestSetsTheBound) {
  const Chip& c = find_chip("M4 Max");
  LaunchWork memory = launch(64, mixed_ops());
  memory.device_bytes_unique = 1ull << 33;
  const LaunchWork compute = launch(256, mixed_ops());
  KernelWork k = kernel({compute, memory});
  k.useful_flops = 1e12;
  const Prediction p = predict(c, k);
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_DOUBLE_EQ(p.seconds, p.launches[0].seconds + p.launches[1].seconds);
  EXPECT_EQ(p.bound, Bound::device_memory);
  EXPECT_DOUBLE_EQ(p.tflops, 1.0 / p.seconds);
  // Mostly half-operand MMAs: utilization against the FP16 roof.
  EXPECT_DOUBLE_EQ(p.utilization, 1e12 / p.seconds / peak_flops(c, true));
  EXPECT_EQ(p.chip, "M4 Max");
}

TEST(CostModel, ClassesMatchAnEvenSpread) {
  const Chip& c = find_chip("M2 Max");
  const LaunchWork even = launch(500, mixed_ops());
  LaunchWork classed = even;
  classed.classes.push_back({300, mixed_ops(), {}, 0, 0});
  classed.classes.push_back({200, mixed_ops(), {}, 0, 0});
  EXPECT_DOUBLE_EQ(seconds(c, classed), seconds(c, even));
}

TEST(CostModel, HeavierClassesAndBusySimdgroupsTakeLonger) {
  const Chip& c = find_chip("M1 Max");
  LaunchWork l = launch(1000, mixed_ops());
  l.classes.push_back({1000, mixed_ops(), {}, 0, 0});
  const double balanced = seconds(c, l);

  // One simdgroup doing all the FMAs: the threadgroup waits for it.
  OpCounts busiest{};
  at(busiest, Op::f32_fma) = at(l.classes[0].ops, Op::f32_fma);
  l.classes[0].max_simdgroup_ops = busiest;
  EXPECT_GT(seconds(c, l), balanced);

  // Causal-like grid: the second half of the threadgroups does twice the work.
  LaunchWork skewed = launch(1000, mixed_ops());
  OpCounts twice = mixed_ops();
  for (double& x : twice) x *= 2;
  skewed.classes = {{500, mixed_ops(), {}, 0, 0}, {500, twice, {}, 0, 0}};
  EXPECT_GT(seconds(c, skewed), balanced);
}

TEST(Dispatch, GreedyInGridOrder) {
  // 3,3,2,2,2 on 2 slots: 3|3, then 2 and 2 at t=3, the last 2 at t=5 -> 7.
  const std::vector<ThreadgroupRun> runs = {{2, 3.0}, {3, 2.0}};
  EXPECT_DOUBLE_EQ(dispatch_makespan(runs, 2), 7.0);
  EXPECT_DOUBLE_EQ(dispatch_makespan(runs, 5), 3.0);
  EXPECT_DOUBLE_EQ(dispatch_makespan(runs, 1), 12.0);
  EXPECT_DOUBLE_EQ(dispatch_makespan({}, 4), 0.0);
}

TEST(Dispatch, AggregatedLargeGridEqualsPlainSimulation) {
  const std::vector<ThreadgroupRun> runs = {
      {3, 5.0}, {1'500'001, 1.25e-6}, {7, 3e-3}, {2'000'003, 0.7e-6}, {123'457, 2.1e-6}};
  for (uint64_t slots : {1ull, 37ull, 120ull, 960ull}) {
    const double fast = dispatch_makespan(runs, slots);
    const double plain = dispatch_makespan(runs, slots, /*exact=*/true);
    EXPECT_NEAR(fast, plain, 1e-9 * plain) << slots;
  }
}

TEST(CostModel, PeakAndBoundNames) {
  const Chip& m1 = find_chip("M1");
  EXPECT_NEAR(peak_fp32_flops(m1) / 1e12, 2.617, 0.01);
  EXPECT_DOUBLE_EQ(peak_flops(m1, true), peak_fp32_flops(m1) * m1.fp16_rate);
  std::set<std::string_view> names;
  for (Bound b : {Bound::compute, Bound::transcendental, Bound::matrix, Bound::device_memory, Bound::threadgroup_memory,
                  Bound::latency, Bound::tensor})
    names.insert(to_string(b));
  EXPECT_EQ(names.size(), 7u);
  EXPECT_EQ(to_string(Bound::device_memory), "device memory");
  EXPECT_EQ(to_string(Bound::tensor), "tensor (neural accelerator)");
}

// ---- Metal 4 TensorOps (matmul2d) ----

OpCounts blocks(Op op, double n) {
  OpCounts ops{};
  at(ops, op) = n;
  return ops;
}

// On M5 a half/bfloat block occupies the partition's accelerator share for
// 1024 FLOPs / (1024 / 4 schedulers) = 4 cycles, an integer block half that;
// each takes one issue slot (assumption). A float32 operand runs on the
// shader ALUs like a simdgroup MMA.
TEST(TensorOps, CostOnNeuralAccelerators) {
  const Chip& m5 = find_chip("M5");
  ASSERT_TRUE(m5.has_neural_accelerators());
  ThreadgroupCycles t = threadgroup_cycles(m5, blocks(Op::tensor_mma_f16, 100));
  EXPECT_DOUBLE_EQ(t.tensor, 100 * 1024 * m5.schedulers_per_core / m5.tensor_flops_per_core_per_cycle_f16);
  EXPECT_DOUBLE_EQ(t.tensor, 400);
  EXPECT_DOUBLE_EQ(t.issue, 100);
  EXPECT_DOUBLE_EQ(t.matrix, 100);
  EXPECT_DOUBLE_EQ(t.transcendental, 0);

  t = threadgroup_cycles(m5, blocks(Op::tensor_mma_i8, 100));
  EXPECT_DOUBLE_EQ(t.tensor, 100 * 1024 * m5.schedulers_per_core / m5.tensor_flops_per_core_per_cycle_i8);
  EXPECT_DOUBLE_EQ(t.tensor, 200);
  EXPECT_DOUBLE_EQ(t.issue, 100);

  t = threadgroup_cycles(m5, blocks(Op::tensor_mma_f32, 100));
  EXPECT_DOUBLE_EQ(t.tensor, 0);
  EXPECT_DOUBLE_EQ(t.issue, 100 * m5.mma_cycles_f32);
  EXPECT_DOUBLE_EQ(t.matrix, 100 * m5.mma_cycles_f32);

  EXPECT_DOUBLE_EQ(peak_tensor_flops(m5, Op::tensor_mma_f16), 10 * 1024 * m5.clock_ghz * 1e9);
  EXPECT_DOUBLE_EQ(peak_tensor_flops(m5, Op::tensor_mma_i8), 2 * peak_tensor_flops(m5, Op::tensor_mma_f16));
}

// Without accelerators, Metal 4 runs matmul2d on the shader cores: a block
// costs a simdgroup_matrix MMA of its operand types on the issue slots
// (assumption), counted as matrix cycles; half and bfloat share one op and
// cost the slower of the two MMAs; integer blocks cost a half MMA.
TEST(TensorOps, CostOnShaderAlusWithoutAccelerators) {
  for (const Chip& c : chips()) {
    if (c.has_neural_accelerators()) continue;
    SCOPED_TRACE(c.name);
    EXPECT_EQ(peak_tensor_flops(c, Op::tensor_mma_f16), 0);
    const double half = std::max(c.mma_cycles_f16, c.mma_cycles_bf16);
    ThreadgroupCycles t = threadgroup_cycles(c, blocks(Op::tensor_mma_f16, 100));
    EXPECT_DOUBLE_EQ(t.issue, 100 * half);
    EXPECT_DOUBLE_EQ(t.matrix, 100 * half);
    EXPECT_DOUBLE_EQ(t.tensor, 0);
    t = threadgroup_cycles(c, blocks(Op::tensor_mma_i8, 100));
    EXPECT_DOUBLE_EQ(t.issue, 100 * c.mma_cycles_f16);
    EXPECT_DOUBLE_EQ(t.tensor, 0);
    t = threadgroup_cycles(c, blocks(Op::tensor_mma_f32, 100));
    EXPECT_DOUBLE_EQ(t.issue, 100 * c.mma_cycles_f32);
    EXPECT_DOUBLE_EQ(t.matrix, 100 * c.mma_cycles_f32);
  }
  // On M3 and later half and bfloat MMAs cost the same, so a matmul2d
  // kernel predicts exactly like the same blocks as simdgroup MMAs.
  const Chip& m4 = find_chip("M4");
  OpCounts tensor_ops = mixed_ops(), mma_ops = mixed_ops();
  at(tensor_ops, Op::mma_f16_f32) = 0;
  at(tensor_ops, Op::tensor_mma_f16) = 4096;
  at(mma_ops, Op::mma_f16_f32) = 4096;
  const Prediction a = predict(m4, kernel({launch(2048, tensor_ops)}));
  const Prediction b = predict(m4, kernel({launch(2048, mma_ops)}));
  EXPECT_DOUBLE_EQ(a.seconds, b.seconds);
  EXPECT_DOUBLE_EQ(a.utilization, b.utilization);
  EXPECT_EQ(a.bound, Bound::matrix);
  EXPECT_EQ(a.launches.at(0).tensor_seconds, 0);
}

// A threadgroup of matmul2d blocks on M5: bound by the tensor pipe, computed
// by hand. 70 threadgroups of 4 simdgroups and 8 KB are one partial wave
// (24 may reside per core): 7 per core, 28 simdgroups, full latency hiding.
TEST(TensorOps, TensorHeavyLaunchIsTensorBoundOnM5) {
  const Chip& m5 = find_chip("M5");
  OpCounts ops{};
  at(ops, Op::tensor_mma_f16) = 4096;
  at(ops, Op::f32_fma) = 256;
  at(ops, Op::exp2) = 64;
  const LaunchWork l = launch(70, ops);
  const Prediction p = predict(m5, kernel({l}));
  const LaunchPrediction& lp = p.launches.at(0);
  ASSERT_EQ(lp.threadgroups_per_core, 24u);
  ASSERT_DOUBLE_EQ(lp.latency_hiding, 1.0);
  EXPECT_DOUBLE_EQ(lp.waves, 70.0 / 240);
  ASSERT_GE(alu_latency_hiding(find_chip("M1 Max"), 28), 1.0);
  // The accelerators do 1024 FLOPs per core per cycle: all 70 x 4096 blocks on 10 cores.
  const double expected =
      70 * 4096 * 1024 / (m5.gpu_cores * m5.tensor_flops_per_core_per_cycle_f16 * m5.clock_ghz * 1e9);
  EXPECT_NEAR(lp.tensor_seconds, expected, 1e-12 * expected);
  EXPECT_NEAR(lp.seconds, expected, 1e-12 * expected);
  EXPECT_EQ(lp.bound, Bound::tensor);
  EXPECT_EQ(p.bound, Bound::tensor);
  EXPECT_LT(lp.compute_seconds, lp.tensor_seconds);  // issue: 4096 + 256 + 64 of 16384 cycles
  EXPECT_NEAR(lp.matrix_seconds, lp.tensor_seconds, 1e-12 * expected);  // the matrix work is the tensor pipe's
  // Counted FLOPs at the accelerators' roof: exactly 100% here (the FMAs fit
  // beside on the ALUs); the peak is the accelerators', not the shader ALUs'.
  EXPECT_NEAR(p.utilization, 1.0, 1e-12);
  const double tensor_flops = 70 * 4096 * 1024.0;
  const double alu_flops = 70 * 256 * 2.0;
  EXPECT_DOUBLE_EQ(peak_flops(m5, kernel({l})),
                   (tensor_flops + alu_flops) / (tensor_flops / peak_tensor_flops(m5, Op::tensor_mma_f16)));
  EXPECT_GT(peak_flops(m5, kernel({l})), 3.9 * peak_flops(m5, true));

  // The same work on M4 (no accelerators, same assumed clock) is bound by
  // the MMAs on the issue slots: about 17/4 times longer.
  const Prediction m4 = predict(find_chip("M4"), kernel({l}));
  EXPECT_EQ(m4.bound, Bound::matrix);
  EXPECT_GT(m4.seconds, 4 * p.seconds);
  EXPECT_LE(m4.utilization, 1.0);
}

// The tensor pipe is named only when it limits: an ALU-heavy threadgroup
// with a few matmul2d blocks stays compute bound, an exp2-heavy one
// transcendental; with one resident simdgroup per core it is latency.
TEST(TensorOps, TensorBoundOnlyWhenTheAcceleratorsLimit) {
  const Chip& m5 = find_chip("M5");
  OpCounts alu{};
  at(alu, Op::tensor_mma_f16) = 256;
  at(alu, Op::f32_fma) = 4000;
  LaunchPrediction p = predict(m5, kernel({launch(2048, alu)})).launches.at(0);
  EXPECT_EQ(p.bound, Bound::compute);
  EXPECT_GT(p.tensor_seconds, 0);
  EXPECT_LT(p.tensor_seconds, p.compute_seconds);

  OpCounts exp{};
  at(exp, Op::tensor_mma_f16) = 1000;  // 4000 tensor cycles
  at(exp, Op::exp2) = 2000;            // 8000 complex-pipe cycles
  p = predict(m5, kernel({launch(2048, exp)})).launches.at(0);
  EXPECT_EQ(p.bound, Bound::transcendental);

  LaunchWork lonely = launch(4096, blocks(Op::tensor_mma_f16, 4096));
  lonely.threads_per_threadgroup = 32;
  lonely.simdgroups_per_threadgroup = 1;
  lonely.threadgroup_memory_bytes = 200000;  // synthetic: only one fits the on-chip pool of a core
  p = predict(m5, kernel({lonely})).launches.at(0);
  ASSERT_EQ(p.threadgroups_per_core, 1u);
  EXPECT_EQ(p.bound, Bound::latency);
  // The tensor pipe hides latency as MMAs do (assumption): one resident
  // simdgroup with the default two chains keeps 2 x 18 / 36 / 4 = 1/4 of a
  // scheduler's MMA rate, so a threadgroup's 4096 x 4 tensor cycles last
  // 16384 x 4 / 4 cycles; 4096 threadgroups on 10 slots take 410 rounds.
  EXPECT_DOUBLE_EQ(p.mma_latency_hiding, 0.25);
  EXPECT_DOUBLE_EQ(p.latency_hiding, 1.02 / 2.75 / 4);
  const double expected = 410 * 16384 * (4.0 / 4) / (m5.clock_ghz * 1e9);
  EXPECT_NEAR(p.tensor_seconds, expected, 1e-12 * expected);
}

// A simdgroup drives only its own partition's accelerator share: one
// simdgroup doing all of a threadgroup's blocks takes as long as if the
// threadgroup had that one simdgroup's rate.
TEST(TensorOps, BusiestSimdgroupBoundsTheTensorPipe) {
  const Chip& m5 = find_chip("M5");
  LaunchWork l = launch(2048, blocks(Op::tensor_mma_f16, 4096));
  l.classes.push_back({2048, blocks(Op::tensor_mma_f16, 4096), blocks(Op::tensor_mma_f16, 1024), 0, 0});
  const double even = predict(m5, kernel({l})).seconds;
  l.classes[0].max_simdgroup_ops = blocks(Op::tensor_mma_f16, 4096);
  EXPECT_DOUBLE_EQ(predict(m5, kernel({l})).seconds, 4 * even);
}

// Utilization never exceeds 100%: the roof is the fastest the chip could run
// the kernel's counted work split the way the kernel splits it between the
// accelerators and the shader ALUs. Random mixes on every chip, with counted
// FLOPs and with useful FLOPs equal to the matrix FLOPs.
TEST(TensorOps, UtilizationNeverAboveOne) {
  std::mt19937 rng(20251015);
  std::uniform_real_distribution<double> amount(0, 1);
  const Op kinds[] = {Op::tensor_mma_f16, Op::tensor_mma_i8, Op::tensor_mma_f32, Op::mma_f16_f32,
                      Op::mma_bf16_f32,   Op::mma_f32_f32,   Op::f32_fma,        Op::f16_fma,
                      Op::f32_add,        Op::f16_mul,       Op::exp2,           Op::threadgroup_load};
  for (int trial = 0; trial < 300; ++trial) {
    OpCounts ops{};
    for (Op o : kinds)
      if (amount(rng) < 0.5) at(ops, o) = std::floor(amount(rng) * 8192);
    LaunchWork l = launch(1 + static_cast<uint64_t>(amount(rng) * 3000), ops);
    l.threads_per_threadgroup = 32u << static_cast<int>(amount(rng) * 4);  // 1..8 simdgroups
    l.simdgroups_per_threadgroup = l.threads_per_threadgroup / 32;
    l.threadgroup_memory_bytes = 1024 + static_cast<uint64_t>(amount(rng) * 31744);
    KernelWork k = kernel({l});
    double matrix = 0;
    for (Op o : {Op::tensor_mma_f16, Op::tensor_mma_i8, Op::tensor_mma_f32, Op::mma_f16_f32, Op::mma_bf16_f32,
                 Op::mma_f32_f32})
      matrix += 1024 * l.op(o);
    for (const Chip& c : chips()) {
      const Prediction counted = predict(c, k);
      if (counted.seconds <= 0) continue;
      EXPECT_LE(counted.utilization, 1.0 + 1e-9) << c.name << " trial " << trial;
      if (matrix <= 0) continue;
      KernelWork useful = k;
      useful.useful_flops = matrix;
      EXPECT_LE(predict(c, useful).utilization, 1.0 + 1e-9) << c.name << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace mfagen::profile
