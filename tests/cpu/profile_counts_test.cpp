// `mfagen profile`'s counting (docs/profile.md): hand-written kernels whose
// counts are known exactly, per simdgroup issue; divergence paid for by the
// whole simdgroup; the stand-in's built-ins counted as the one GPU op they
// are; sampling extrapolated against full runs.
#include <bit>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/harness.h"
#include "mfagen/cpu/profile_ops.h"

namespace mfagen::cputest {
namespace {

using cpu::profile::Op;

std::shared_ptr<const cpu::Module> compile_profiled(std::string_view name) {
  cpu::CompileOptions options;
  options.profile = true;
  return cpu::compile_file(kernel_file(name), options);
}

cpu::LaunchResult run_profiled(const cpu::Module& module, std::string_view entry, Dim3 groups, Dim3 threads,
                               std::vector<cpu::BufferBinding> buffers, uint64_t sample = 0) {
  cpu::LaunchOptions options;
  options.threadgroups = groups;
  options.threads_per_threadgroup = threads;
  options.buffers = std::move(buffers);
  options.profile.enabled = true;
  options.profile.sample_threadgroups = sample;
  return cpu::launch(module, entry, options);
}

double count(const cpu::LaunchResult& r, Op op) { return r.profile->ops[static_cast<uint32_t>(op)]; }

TEST(ProfileCounts, SimdgroupMatrixOpsCountOncePerSimdgroupWithARuntimeTripCount) {
  auto module = compile_profiled("profile_counts.metal");
  for (uint32_t n : {1u, 5u}) {
    std::vector<_Float16> a(64 * n, _Float16(0.5f));
    std::vector<float> c(64);
    auto r = run_profiled(*module, "mma_loop", {1, 1, 1}, {32, 1, 1}, {bind(0, a), bind(1, c), bind_scalar(2, n)});
    ASSERT_TRUE(IsClean(r));
    ASSERT_TRUE(r.profile);
    EXPECT_EQ(count(r, Op::mma_f16_f32), n);
    EXPECT_EQ(count(r, Op::sgm_load_device), 2 * n);
    EXPECT_EQ(count(r, Op::sgm_load_device_bytes), 2 * n * 64 * 2);
    EXPECT_EQ(count(r, Op::sgm_store_device), 1);
    EXPECT_EQ(count(r, Op::sgm_store_device_bytes), 64 * 4);
    // The stand-in's 16 fmas per lane and its shuffles are not the kernel's.
    EXPECT_EQ(count(r, Op::f32_fma), 0);
    EXPECT_EQ(count(r, Op::simd_shuffle), 0);
    // No element-wise device loads of the matrices; `n` is re-read each
    // round because the collective inside the MMA is an opaque call here.
    EXPECT_EQ(count(r, Op::device_load), n + 1);
    EXPECT_FLOAT_EQ(c[0], 0.25f * 8 * n) << "the profiled module still computes";
    // Device bytes: every lane reads its 2 elements of each matrix and writes 2 of c.
    EXPECT_EQ(r.profile->traffic.at(0).bytes_read, 2 * n * 64 * 2);
    EXPECT_EQ(r.profile->traffic.at(1).bytes_written, 64 * 4);
  }
}

TEST(ProfileCounts, DivergentBranchesAndLoopsArePaidByTheWholeSimdgroup) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<float> in(64 * 4, 1.0f), out(64);
  auto r = run_profiled(*module, "divergent", {1, 1, 1}, {64, 1, 1}, {bind(0, in), bind(1, out)});
  ASSERT_TRUE(IsClean(r));
  EXPECT_EQ(count(r, Op::exp2), 2) << "both simdgroups run the exp2 side";
  EXPECT_EQ(count(r, Op::log2), 2) << "and the log2 side";
  EXPECT_EQ(count(r, Op::f32_fma), 2 * 31) << "each simdgroup runs its busiest lane's 31 rounds";
  EXPECT_EQ(count(r, Op::f32_add), 2);
  EXPECT_EQ(count(r, Op::device_load), 2) << "one float4 load per simdgroup";
  EXPECT_EQ(count(r, Op::device_store), 2);
  EXPECT_EQ(r.profile->traffic.at(0).bytes_read, 64 * 16);
  EXPECT_EQ(r.profile->traffic.at(1).bytes_written, 64 * 4);
  EXPECT_EQ(r.profile->samples.size(), 1u);
  EXPECT_EQ(r.profile->samples[0].busiest_simdgroup[static_cast<uint32_t>(Op::f32_fma)], 31);
  // A handful of live values (the float4, x, acc, the loop counter, pointers):
  // the estimate is of that order, not zero and not the module's total.
  EXPECT_GE(r.profile->registers_per_thread, 6u);
  EXPECT_LE(r.profile->registers_per_thread, 40u);
}

// MSL's packed vectors (element-aligned) read at any element, and each is one
// memory instruction of its bytes, as the cost model counts them.
TEST(ProfileCounts, PackedVectorsLoadAtAnyElementAsOneInstruction) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<_Float16> h(4 * 32 + 4);
  std::vector<uint16_t> b(4 * 32 + 4);
  std::vector<float> f(4 * 32 + 4), out(12 * 32 + 4, -1.0f);
  for (size_t i = 0; i < f.size(); ++i) {
    h[i] = _Float16(float(i) * 0.5f);
    b[i] = to_bfloat_bits(double(i) * 0.25);
    f[i] = float(i) * 3.0f;
  }
  auto r = run_profiled(*module, "packed_copy", {1, 1, 1}, {32, 1, 1}, {bind(0, h), bind(1, b), bind(2, f), bind(3, out)});
  ASSERT_TRUE(IsClean(r));
  for (uint32_t t = 0; t < 32; ++t)
    for (uint32_t e = 0; e < 4; ++e) {
      const uint32_t i = 4 * t + 1 + e;
      EXPECT_EQ(out[12 * t + 1 + e], float(i) * 0.5f) << t;
      EXPECT_EQ(out[12 * t + 5 + e], float(i) * 0.25f) << t;
      EXPECT_EQ(out[12 * t + 9 + e], float(i) * 3.0f) << t;
    }
  EXPECT_EQ(out[0], -1.0f) << "nothing before element 1 is written";
  // The bfloat4 is copied by the stand-in's struct copy, through the device
  // pointer cast to generic; its address space is inferred, as a GPU
  // compiler does, so it is a device load like the others.
  EXPECT_EQ(count(r, Op::device_load), 3) << "one packed half4, bfloat4 and float4 load per lane";
  EXPECT_EQ(count(r, Op::generic_load), 0) << "a generic pointer from a device argument is a device access";
  EXPECT_EQ(count(r, Op::device_store), 3) << "three packed float4 stores per lane";
  // x86 clang loads the half4 as one 64-bit integer and shifts each half out
  // of it (3 shifts); a GPU reads the 16-bit halves of its registers
  // directly. What stays is the index 4t (one shift); the bfloat4's four
  // widenings are their own op, priced per chip (a shift on M1/M2, which
  // have no bfloat; free on M3 and later).
  EXPECT_EQ(count(r, Op::int_logic), 1) << "no shift extracts a half of the half4";
  EXPECT_EQ(count(r, Op::widen_bf16), 4) << "the four bfloat -> float widenings";
  EXPECT_EQ(count(r, Op::widen), 4) << "the four half -> float widenings (free)";
  EXPECT_EQ(r.profile->traffic.at(0).bytes_read, 32 * 8);
  EXPECT_EQ(r.profile->traffic.at(1).bytes_read, 32 * 8);
  EXPECT_EQ(r.profile->traffic.at(2).bytes_read, 32 * 16);
  EXPECT_EQ(r.profile->traffic.at(3).bytes_written, 32 * 48);
}

// Adjacent scalar accesses of a block count as the vector instructions a GPU
// compiler merges them into: four halves one, eight floats two (16 bytes
// each); accesses apart stay one each.
TEST(ProfileCounts, AdjacentScalarAccessesMergeIntoVectorInstructions) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<_Float16> h(256);
  std::vector<float> f(8 * 32), out(32);
  for (size_t i = 0; i < h.size(); ++i) h[i] = _Float16(float(i % 16) * 0.25f);
  for (size_t i = 0; i < f.size(); ++i) f[i] = float(i);
  auto r = run_profiled(*module, "adjacent_scalars", {1, 1, 1}, {32, 1, 1}, {bind(0, h), bind(1, f), bind(2, out)});
  ASSERT_TRUE(IsClean(r));
  for (uint32_t t = 0; t < 32; ++t) {
    double halves = 0, floats = 0;
    for (uint32_t e = 0; e < 4; ++e) halves += float(h[4 * t + e]);
    for (uint32_t e = 0; e < 8; ++e) floats += f[8 * t + e];
    EXPECT_FLOAT_EQ(out[t], float(halves + floats + float(h[t + 128]) * float(h[t + 192]))) << t;
  }
  EXPECT_EQ(count(r, Op::device_load), 1 + 2 + 2);
  EXPECT_EQ(count(r, Op::device_store), 1);
}

// A threadgroup's re-reads of a line it has read already are L1 hits: what
// it reads past L1 is its distinct 128-byte lines, per threadgroup (another
// threadgroup reading the same line misses its own core's L1).
TEST(ProfileCounts, DistinctLinesPerThreadgroupAreWhatPassesL1) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<float> table(32, 0.5f), own(2 * 64), out(2 * 64);
  for (size_t i = 0; i < own.size(); ++i) own[i] = float(i);
  auto r = run_profiled(*module, "shared_reads", {2, 1, 1}, {64, 1, 1}, {bind(0, table), bind(1, own), bind(2, out)});
  ASSERT_TRUE(IsClean(r));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_FLOAT_EQ(out[i], float(i) + 16.0f) << i;
  EXPECT_EQ(r.profile->traffic.at(0).bytes_read, 2 * 64 * 32 * 4);
  EXPECT_EQ(r.profile->traffic.at(1).bytes_read, 2 * 64 * 4);
  ASSERT_EQ(r.profile->samples.size(), 2u);
  for (const auto& tg : r.profile->samples) EXPECT_EQ(tg.device_bytes_read_past_l1, 128 + 2 * 128);
  EXPECT_EQ(r.profile->device_bytes_read_past_l1, 2 * (128 + 2 * 128));
}

// A divide by a constant is counted as the multiply-high and shifts every
// compiler emits for it; only the divide by a runtime value is a divide.
TEST(ProfileCounts, DivisionByAConstantIsAMultiplyAndShifts) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<uint32_t> in(32), out(4 * 32);
  uint32_t divisor = 7;
  for (uint32_t t = 0; t < 32; ++t) in[t] = 1000 + 37 * t;
  auto r = run_profiled(*module, "divide_by_constant", {1, 1, 1}, {32, 1, 1},
                        {bind(0, in), bind(1, out), bind_scalar(2, divisor)});
  ASSERT_TRUE(IsClean(r));
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(out[4 * t], in[t] / 20);
    EXPECT_EQ(out[4 * t + 1], in[t] % 20);
    EXPECT_EQ(out[4 * t + 2], in[t] / 16);
    EXPECT_EQ(out[4 * t + 3], in[t] / 7);
  }
  EXPECT_EQ(count(r, Op::int_divide), 1) << "x / n only";
  // x / 20: a multiply-high and a shift; x % 20: a multiply-high, a shift,
  // a multiply and a subtract; x / 16: a shift. The indices 4t, 4t + 1,
  // 4t + 2 and 4t + 3 are a shift and three ors.
  EXPECT_EQ(count(r, Op::int_mul), 1 + 2);
  EXPECT_EQ(count(r, Op::int_logic), 1 + 1 + 1 + 4);
  EXPECT_EQ(count(r, Op::int_add), 1);
}

TEST(ProfileCounts, BarriersCollectivesAndThreadgroupBytes) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<float> out(64);
  auto r = run_profiled(*module, "shared_sum", {1, 1, 1}, {64, 1, 1}, {bind(0, out)});
  ASSERT_TRUE(IsClean(r));
  EXPECT_EQ(count(r, Op::threadgroup_barrier), 2);
  EXPECT_EQ(count(r, Op::simd_reduce), 2);
  EXPECT_EQ(count(r, Op::threadgroup_store), 2);
  EXPECT_EQ(count(r, Op::threadgroup_load), 2);
  EXPECT_EQ(r.profile->threadgroup_bytes_written, 64 * 4);
  EXPECT_EQ(r.profile->threadgroup_bytes_read, 64 * 4);
  EXPECT_EQ(r.profile->threadgroup_memory_bytes, 64 * 4);
  EXPECT_FLOAT_EQ(out[0], 32 * 33 / 2.0f) << "lanes 0..31 read tids 1..32";
}

// A simdgroup async copy is the memory instructions that move its bytes, 16
// at a time per lane; the emulation's loop and index arithmetic (an
// emulation frame) is not counted.
TEST(ProfileCounts, AsyncCopiesCountTheirSixteenBytePiecesOnly) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<uint16_t> in(16 * 32), out(16 * 32, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint16_t(0x3c00 + i);
  auto r = run_profiled(*module, "async_copy_tile", {1, 1, 1}, {32, 1, 1}, {bind(0, in), bind(1, out)});
  ASSERT_TRUE(IsClean(r));
  EXPECT_EQ(out, in);
  EXPECT_EQ(count(r, Op::device_load), 2);
  EXPECT_EQ(count(r, Op::threadgroup_store), 2);
  EXPECT_EQ(count(r, Op::threadgroup_load), 2);
  EXPECT_EQ(count(r, Op::device_store), 2);
  for (Op op : {Op::int_add, Op::int_mul, Op::int_logic, Op::int_cmp_select, Op::int_divide, Op::address})
    EXPECT_EQ(count(r, op), 0) << cpu::profile::name(op);
}

// c (16 x 32) = a (16 x 16) b^T with b stored 32 x 16, in float64, from
// each operand's element values.
template <class A, class B>
std::vector<double> product_16x32(const A& a_at, const B& b_at) {
  std::vector<double> c(16 * 32, 0.0);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 32; ++j)
      for (int k = 0; k < 16; ++k) c[i * 32 + j] += a_at(i * 16 + k) * b_at(j * 16 + k);
  return c;
}

// A matmul2d run is its tensor MMAs whatever its operands are. Cooperative
// operands (MLX's NAX kernels fill them element by element) once counted
// the stand-in's emulation of the product: thousands of integer, generic
// memory and fma instructions per run that a GPU never issues.
TEST(ProfileCounts, TensorOpsRunsCountAsTheirMmasWithCooperativeOrTensorOperands) {
  auto module = compile_profiled("profile_tensor_ops.metal");
  std::vector<_Float16> a(16 * 16), b(32 * 16);
  for (size_t i = 0; i < a.size(); ++i) a[i] = _Float16(float(int(i % 7) - 3) * 0.25f);
  for (size_t i = 0; i < b.size(); ++i) b[i] = _Float16(float(int(i % 5) - 2) * 0.5f);
  for (const char* entry : {"coop_operands", "tensor_operands"}) {
    SCOPED_TRACE(entry);
    double integer_ops[2] = {};
    for (uint32_t rounds : {1u, 3u}) {
      std::vector<float> c(16 * 32, -1.0f);
      auto r = run_profiled(*module, entry, {1, 1, 1}, {32, 1, 1},
                            {bind(0, a), bind(1, b), bind(2, c), bind_scalar(3, rounds)});
      ASSERT_TRUE(IsClean(r));
      const auto expected = product_16x32([&](int e) { return double(a[e]); }, [&](int e) { return double(b[e]); });
      for (size_t e = 0; e < c.size(); ++e) ASSERT_EQ(c[e], float(rounds * expected[e])) << e;
      // 16x32x16: eight 8x8 output blocks, two 8-deep steps each, per run.
      EXPECT_EQ(count(r, Op::tensor_mma_f16), 16 * rounds);
      EXPECT_EQ(count(r, Op::f32_fma), 0) << "the emulated product is not the kernel's";
      EXPECT_EQ(count(r, Op::generic_load) + count(r, Op::generic_store), 0);
      EXPECT_EQ(count(r, Op::widen), 0);
      // out.store: one instruction per slot of the 16 x 32 float destination, to device memory.
      EXPECT_EQ(count(r, Op::device_store), 16 * 32 / 32);
      EXPECT_EQ(count(r, Op::threadgroup_store), std::string(entry) == "coop_operands" ? 0 : (16 * 16 + 32 * 16) / 32);
      integer_ops[rounds / 2] = count(r, Op::int_logic) + count(r, Op::int_add) + count(r, Op::int_cmp_select) +
                                 count(r, Op::int_divide) + count(r, Op::int_mul);
    }
    EXPECT_LE(integer_ops[1] - integer_ops[0], 2 * 4) << "a run costs no integer work beyond its loop's";
    EXPECT_LE(integer_ops[0], 100) << "the kernel's own staging and index arithmetic";
  }
}

// A run reads its operand tiles once, as a GPU does, whether k is static
// (the stand-in stages the tiles) or dynamic (it reads each element where an
// output uses it, and the traffic counters get the tiles once instead):
// threadgroup bytes read = the kernel's own none + rounds x (16x16 + 32x16)
// halfs.
TEST(ProfileCounts, TensorOpsRunsReadTheirTilesOnceWithAStaticOrDynamicK) {
  auto module = compile_profiled("profile_tensor_ops.metal");
  std::vector<_Float16> a(16 * 16), b(32 * 16);
  for (size_t i = 0; i < a.size(); ++i) a[i] = _Float16(float(int(i % 7) - 3) * 0.25f);
  for (size_t i = 0; i < b.size(); ++i) b[i] = _Float16(float(int(i % 5) - 2) * 0.5f);
  const auto expected = product_16x32([&](int e) { return double(a[e]); }, [&](int e) { return double(b[e]); });
  for (const char* entry : {"tensor_operands", "tensor_operands_dynamic_k"}) {
    SCOPED_TRACE(entry);
    for (uint32_t rounds : {1u, 3u}) {
      std::vector<float> c(16 * 32, -1.0f);
      auto r = run_profiled(*module, entry, {1, 1, 1}, {32, 1, 1},
                            {bind(0, a), bind(1, b), bind(2, c), bind_scalar(3, rounds)});
      ASSERT_TRUE(IsClean(r));
      for (size_t e = 0; e < c.size(); ++e) ASSERT_EQ(c[e], float(rounds * expected[e])) << e;
      EXPECT_EQ(r.profile->threadgroup_bytes_read, rounds * (16 * 16 + 32 * 16) * 2);
      EXPECT_EQ(count(r, Op::tensor_mma_f16), 16 * rounds);
    }
  }
}

// relaxed_precision lets the implementation "sacrifice accuracy for
// performance" (MPPTensorOpsMatMul2d.h): a float32 operand then counts as a
// 16-bit block, which the cost model runs on the Neural Accelerators. The
// values stay the float32 products with or without the flag.
TEST(ProfileCounts, RelaxedPrecisionFloatOperandsCountAsSixteenBitBlocks) {
  auto module = compile_profiled("profile_tensor_ops.metal");
  std::vector<float> a(16 * 16);
  std::vector<_Float16> b(32 * 16);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 11) - 5) * 0.1f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = _Float16(float(int(i % 5) - 2) * 0.5f);
  uint32_t rounds = 2;
  for (bool relaxed : {false, true}) {
    SCOPED_TRACE(relaxed ? "relaxed" : "strict");
    std::vector<float> c(16 * 32, -1.0f);
    auto r = run_profiled(*module, relaxed ? "float_left_relaxed" : "float_left_strict", {1, 1, 1}, {32, 1, 1},
                          {bind(0, a), bind(1, b), bind(2, c), bind_scalar(3, rounds)});
    ASSERT_TRUE(IsClean(r));
    const auto expected = product_16x32([&](int e) { return double(a[e]); }, [&](int e) { return double(b[e]); });
    for (size_t e = 0; e < c.size(); ++e) ASSERT_NEAR(c[e], rounds * expected[e], 1e-5) << e;
    EXPECT_EQ(count(r, Op::tensor_mma_f16), relaxed ? 16 * rounds : 0);
    EXPECT_EQ(count(r, Op::tensor_mma_f32), relaxed ? 0 : 16 * rounds);
  }
}

// A marked built-in nested in another one's body is part of the outer
// operation: matmul2d's emulated products widen every bfloat element, and
// those widenings once counted as the kernel's (3 million per threadgroup of
// MLX's NAX attention in bfloat, 24 per 8x8x8 block).
TEST(ProfileCounts, BuiltinsInsideAMatmul2dRunAreNotCounted) {
  auto module = compile_profiled("profile_tensor_ops.metal");
  auto to_bf16 = [](float f) { return uint16_t(std::bit_cast<uint32_t>(f) >> 16); };  // exact for these values
  std::vector<uint16_t> a(16 * 16), b(32 * 16);
  for (size_t i = 0; i < a.size(); ++i) a[i] = to_bf16(float(int(i % 7) - 3) * 0.25f);
  for (size_t i = 0; i < b.size(); ++i) b[i] = to_bf16(float(int(i % 5) - 2) * 0.5f);
  auto from_bf16 = [](uint16_t v) { return double(std::bit_cast<float>(uint32_t(v) << 16)); };
  uint32_t rounds = 3;
  std::vector<float> c(16 * 32, -1.0f);
  auto r = run_profiled(*module, "bfloat_operands", {1, 1, 1}, {32, 1, 1},
                        {bind(0, a), bind(1, b), bind(2, c), bind_scalar(3, rounds)});
  ASSERT_TRUE(IsClean(r));
  const auto expected = product_16x32([&](int e) { return from_bf16(a[e]); }, [&](int e) { return from_bf16(b[e]); });
  for (size_t e = 0; e < c.size(); ++e) ASSERT_EQ(c[e], float(rounds * expected[e])) << e;
  EXPECT_EQ(count(r, Op::tensor_mma_f16), 16 * rounds);
  EXPECT_EQ(count(r, Op::widen_bf16), 0) << "the emulated product's widenings are not the kernel's";
}

TEST(ProfileCounts, SampledLaunchesExtrapolateWithinOnePercentOfAFullRun) {
  auto module = compile_profiled("profile_counts.metal");
  const Dim3 grid{64, 3, 1};
  std::vector<float> out(64 * 3);
  auto full = run_profiled(*module, "ramp", grid, {32, 1, 1}, {bind(0, out)});
  ASSERT_EQ(full.profile->samples.size(), 64u * 3);
  EXPECT_EQ(count(full, Op::f32_mul), 3 * (63 * 64 / 2)) << "threadgroup x multiplies x times";
  for (uint64_t sample : {12u, 24u, 48u}) {
    auto sampled = run_profiled(*module, "ramp", grid, {32, 1, 1}, {bind(0, out)}, sample);
    ASSERT_EQ(sampled.profile->samples.size(), sample);
    uint64_t represented = 0;
    for (const auto& s : sampled.profile->samples) represented += s.represents;
    EXPECT_EQ(represented, 64u * 3);
    EXPECT_NEAR(count(sampled, Op::f32_mul), count(full, Op::f32_mul), 0.01 * count(full, Op::f32_mul))
        << sample << " threadgroups";
    EXPECT_NE(sampled.profile->sampling.find("of 192 threadgroups"), std::string::npos) << sampled.profile->sampling;
  }
}

// Alike in y (a planned batch's q heads, a decode's kv heads): strata of the
// threadgroups ordered y fastest span every y, so fewer samples than rows
// still cover x. 16 rows of the ramp, 3 samples: each stratum is about 21
// consecutive x across every row, and the midpoints integrate the ramp;
// linear strata are 5 to 6 whole rows each, and their middles fall wherever
// in a row they fall (here 32% over). A sample above x * z is lowered to it:
// one threadgroup per x, exact.
TEST(ProfileCounts, YAlikeSamplesSpanEveryColumn) {
  auto module = compile_profiled("profile_counts.metal");
  const Dim3 grid{64, 16, 1};
  std::vector<float> out(64 * 16);
  auto full = run_profiled(*module, "ramp", grid, {32, 1, 1}, {bind(0, out)});
  auto y_alike = [&](uint64_t sample) {
    cpu::LaunchOptions options;
    options.threadgroups = grid;
    options.threads_per_threadgroup = {32, 1, 1};
    options.buffers = {bind(0, out)};
    options.profile.enabled = true;
    options.profile.sample_threadgroups = sample;
    options.profile.y_alike_entries = {"ramp"};
    return cpu::launch(*module, "ramp", options);
  };
  auto sampled = y_alike(3);
  ASSERT_EQ(sampled.profile->samples.size(), 3u);
  uint64_t represented = 0;
  for (const auto& s : sampled.profile->samples) represented += s.represents;
  EXPECT_EQ(represented, 64u * 16);
  EXPECT_NEAR(count(sampled, Op::f32_mul), count(full, Op::f32_mul), 0.01 * count(full, Op::f32_mul));
  EXPECT_NE(sampled.profile->sampling.find("y fastest"), std::string::npos) << sampled.profile->sampling;
  auto linear = run_profiled(*module, "ramp", grid, {32, 1, 1}, {bind(0, out)}, 3);
  EXPECT_GT(std::fabs(count(linear, Op::f32_mul) - count(full, Op::f32_mul)), 0.2 * count(full, Op::f32_mul));
  auto capped = y_alike(500);
  ASSERT_EQ(capped.profile->samples.size(), 64u);
  EXPECT_EQ(count(capped, Op::f32_mul), count(full, Op::f32_mul));
}

TEST(ProfileCounts, AProfiledModuleAlsoRunsWithoutCollecting) {
  auto module = compile_profiled("profile_counts.metal");
  std::vector<float> out(64);
  auto r = run(*module, "shared_sum", {1, 1, 1}, {64, 1, 1}, {bind(0, out)});
  ASSERT_TRUE(IsClean(r));
  EXPECT_FALSE(r.profile.has_value());
  EXPECT_FLOAT_EQ(out[0], 32 * 33 / 2.0f);
}

// Profiling compiles are -O2 and the others -O1 (cpu::compile): both must
// compute the same bits, or a profile would time a different kernel.
TEST(ProfileCounts, AProfiledModuleComputesTheSameBitsAsAnOrdinaryOne) {
  auto profiled = compile_profiled("profile_counts.metal");
  auto ordinary = compile_kernel("profile_counts.metal");
  std::vector<float> in(64 * 4);
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::sin(float(i) * 0.37f) * 3.0f;
  std::vector<float> out_profiled(64), out_ordinary(64);
  ASSERT_TRUE(IsClean(run(*profiled, "divergent", {1, 1, 1}, {64, 1, 1}, {bind(0, in), bind(1, out_profiled)})));
  ASSERT_TRUE(IsClean(run(*ordinary, "divergent", {1, 1, 1}, {64, 1, 1}, {bind(0, in), bind(1, out_ordinary)})));
  EXPECT_EQ(0, std::memcmp(out_profiled.data(), out_ordinary.data(), out_ordinary.size() * sizeof(float)));

  uint32_t n = 3;
  std::vector<_Float16> a(64 * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = _Float16(std::cos(float(i)) * 0.75f);
  std::vector<float> c_profiled(64), c_ordinary(64);
  ASSERT_TRUE(IsClean(run(*profiled, "mma_loop", {1, 1, 1}, {32, 1, 1}, {bind(0, a), bind(1, c_profiled), bind_scalar(2, n)})));
  ASSERT_TRUE(IsClean(run(*ordinary, "mma_loop", {1, 1, 1}, {32, 1, 1}, {bind(0, a), bind(1, c_ordinary), bind_scalar(2, n)})));
  EXPECT_EQ(0, std::memcmp(c_profiled.data(), c_ordinary.data(), c_ordinary.size() * sizeof(float)));
  EXPECT_NE(c_ordinary[0], 0.0f);
}

TEST(ProfileCounts, ProfilingNeedsAProfiledModule) {
  auto module = compile_kernel("profile_counts.metal");
  std::vector<float> out(64);
  EXPECT_FALSE(module->profiled());
  EXPECT_THROW(run_profiled(*module, "shared_sum", {1, 1, 1}, {64, 1, 1}, {bind(0, out)}), cpu::LaunchError);
}

}  // namespace
}  // namespace mfagen::cputest

namespace mfagen::cputest {
namespace {

// The stand-in spells the op numbers by hand (it cannot include the host
// header): each `__mf_op_NAME = N` must be Op::NAME.
TEST(ProfileCounts, StandinMarkerNumbersMatchTheOpList) {
  std::ifstream in(std::filesystem::path(MFAGEN_TEST_DATA_DIR) /
                   "../../runtime/metal_standin/include/mfagen_standin/profile_markers.h");
  ASSERT_TRUE(in);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    const size_t at = line.find("__mf_op_"), eq = line.find(" = ");
    if (at != 2 || eq == std::string::npos) continue;
    const std::string name = line.substr(at + 8, eq - at - 8);
    const uint32_t value = std::stoul(line.substr(eq + 3));
    if (name == "emulation_frame") {
      EXPECT_EQ(value, cpu::profile::kEmulationFrameOp) << line;
      continue;
    }
    ASSERT_LT(value, cpu::profile::kOpCount) << line;
    EXPECT_EQ(cpu::profile::kOpNames[value], name) << line;
    ++checked;
  }
  EXPECT_GE(checked, 17);
}

}  // namespace
}  // namespace mfagen::cputest
