#include "profile/cost_model.h"

#include "profile/latency_hiding.h"
#include "profile/load_latency.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace mfagen::profile {

std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::compute:
      return "compute";
    case Bound::transcendental:
      return "transcendental";
    case Bound::matrix:
      return "matrix";
    case Bound::device_memory:
      return "device memory";
    case Bound::threadgroup_memory:
      return "threadgroup memory";
    case Bound::latency:
      return "latency";
    case Bound::tensor:
      return "tensor (neural accelerator)";
  }
  return "unknown";
}

double peak_fp32_flops(const Chip& c) { return c.gpu_cores * c.fp32_lanes_per_core_per_cycle * 2 * c.clock_ghz * 1e9; }

double peak_flops(const Chip& c, bool half) { return peak_fp32_flops(c) * (half ? c.fp16_rate : 1.0); }

double peak_tensor_flops(const Chip& c, Op op) {
  const double per_cycle = op == Op::tensor_mma_f16  ? c.tensor_flops_per_core_per_cycle_f16
                           : op == Op::tensor_mma_i8 ? c.tensor_flops_per_core_per_cycle_i8
                                                     : 0;
  return c.gpu_cores * per_cycle * c.clock_ghz * 1e9;
}

namespace {

// FLOPs of one 8x8x8 block (an MMA or a matmul2d block): 512 multiply-adds.
constexpr double kBlockFlops = 1024;

// Issue slots a simdgroup spends per matmul2d block that runs on a Neural
// Accelerator. Assumption (no public measurement): one, for moving the
// block's operands and accumulators between the register file and the
// accelerator. If the hardware takes larger fragments per instruction (MLX's
// NAX kernels use 16x16 ones, 8 blocks), this overcharges: conservative.
constexpr double kTensorIssueCycles = 1;

// matmul2d blocks that run on the tensor pipe on this chip (half, bfloat and
// integer operands on chips with Neural Accelerators); the others run on the
// shader ALUs like simdgroup_matrix MMAs.
bool on_tensor_pipe(const Chip& c, Op op) {
  return c.has_neural_accelerators() && (op == Op::tensor_mma_f16 || op == Op::tensor_mma_i8);
}

// What one counted op costs a scheduler, in cycles: issue slots (MMAs
// included), the MMA part of them, complex-pipe occupancy and tensor-pipe
// occupancy. The switch has no default so a new Op in profile_ops.h fails to
// compile (-Wswitch) until it is costed here. Sources of each constant:
// docs/cost_model.md.
struct OpCost {
  double issue = 0, matrix = 0, pipe = 0, tensor = 0;
};

// A matmul2d block on the tensor pipe: the partition's accelerator does
// `flops_per_core_per_cycle / schedulers_per_core` per cycle (one accelerator
// share per compute partition, 128 multiply-adds each for half operands, the
// A19 measurement), so a block occupies it 1024 * schedulers / flops cycles,
// in the same scheduler-cycles as the other pipes.
OpCost tensor_block(const Chip& c, double flops_per_core_per_cycle) {
  return {kTensorIssueCycles, kTensorIssueCycles, 0, kBlockFlops * c.schedulers_per_core / flops_per_core_per_cycle};
}

OpCost op_cost(const Chip& c, Op op) {
  switch (op) {
    // MMAs run on the FMA pipes: they take issue cycles, reported apart too.
    case Op::mma_f16_f32:
    case Op::mma_f16_f16:
      return {c.mma_cycles_f16, c.mma_cycles_f16, 0};
    case Op::mma_bf16_f32:
    case Op::mma_bf16_bf16:
      return {c.mma_cycles_bf16, c.mma_cycles_bf16, 0};
    case Op::mma_f32_f32:
      return {c.mma_cycles_f32, c.mma_cycles_f32, 0};
    // simdgroup_load/store of an 8x8 tile: one memory instruction each
    // (assumption). Their bytes are already in the launch's byte totals.
    case Op::sgm_load_device:
    case Op::sgm_load_threadgroup:
    case Op::sgm_store_device:
    case Op::sgm_store_threadgroup:
      return {1, 0, 0};
    case Op::sgm_load_device_bytes:
    case Op::sgm_load_threadgroup_bytes:
    case Op::sgm_store_device_bytes:
    case Op::sgm_store_threadgroup_bytes:
      return {0, 0, 0};
    // One instruction per cycle per scheduler for both float widths.
    case Op::f32_add:
    case Op::f32_mul:
    case Op::f32_fma:
    case Op::f32_cmp_select:
    case Op::f32_minmax:
    case Op::f32_other:
    case Op::f16_add:
    case Op::f16_mul:
    case Op::f16_fma:
    case Op::f16_cmp_select:
    case Op::f16_minmax:
    case Op::f16_other:
      return {1, 0, 0};
    // Complex pipe: one issue slot, then the pipe is busy for its throughput.
    case Op::exp2:
    case Op::log2:
      return {1, 0, c.transcendental_cycles};
    // exp(x) = exp2(x * log2(e)), log(x) = log2(x) * ln(2): one more multiply.
    case Op::exp:
    case Op::log:
      return {2, 0, c.transcendental_cycles};
    case Op::tanh:
      return {1, 0, c.tanh_cycles};
    case Op::rsqrt:
      return {1, 0, c.rsqrt_cycles};
    case Op::reciprocal:
      return {1, 0, c.reciprocal_cycles};
    // A divide is RECIP + FMUL (metal-benchmarks): the multiply is one more issue.
    case Op::divide:
      return {2, 0, c.divide_cycles};
    case Op::sqrt:
      return {1, 0, c.sqrt_cycles};
    case Op::transcendental_other:
      return {1, 0, c.tanh_cycles};  // assumption: costed like tanh
    case Op::int_add:
    case Op::int_logic:
    case Op::int_cmp_select:
    case Op::address:
      return {1, 0, 0};
    case Op::int_mul:
      return {c.int_mul_cycles, 0, 0};
    case Op::int_divide:
      return {c.int_divide_cycles, 0, 0};
    case Op::convert:
      return {1, 0, 0};
    case Op::widen:
      return {0, 0, 0};  // a free operand modifier
    case Op::device_load:
    case Op::device_store:
    case Op::threadgroup_load:
    case Op::threadgroup_store:
    case Op::generic_load:
    case Op::generic_store:
      return {1, 0, 0};
    case Op::threadgroup_barrier:
      return {c.barrier_cycles, 0, 0};
    case Op::simdgroup_barrier:
      // Free: the G13 ISA has threadgroup_barrier and wait but no SIMD-group
      // barrier; a simdgroup shares one execution mask (Dougall Johnson, Apple
      // G13 GPU architecture reference, https://dougallj.github.io/applegpu/docs.html).
      return {0, 0, 0};
    case Op::widen_bf16:
      return {c.bf16_widen_cycles, 0, 0};  // an integer shift on Apple7/8, free with bfloat hardware
    case Op::simd_shuffle:
      return {c.simd_shuffle_cycles, 0, 0};
    case Op::simd_reduce:
      return {c.simd_reduce_cycles, 0, 0};
    case Op::atomic_device:
    case Op::atomic_threadgroup:
      return {1, 0, 0};  // assumption: issue only; contention not modelled
    // Metal 4 TensorOps (matmul2d), per 8x8x8 block of the simdgroup's share.
    // With Neural Accelerators (M5): half/bfloat and integer operands on the
    // tensor pipe. Without (M1..M4), and for a float32 operand everywhere
    // (measured at the SIMD FP32 rate on the A19), the block runs on the
    // shader ALUs and costs a simdgroup_matrix MMA of its operand type
    // (assumption). Half and bfloat are one op, so a block costs the slower
    // of the two MMAs (bfloat is emulated on M1/M2); integer blocks cost a
    // half MMA (the A19 measurements imply the previous generation ran INT8
    // matmul2d at about its FP16 rate).
    case Op::tensor_mma_f16:
      if (on_tensor_pipe(c, op)) return tensor_block(c, c.tensor_flops_per_core_per_cycle_f16);
      return {std::max(c.mma_cycles_f16, c.mma_cycles_bf16), std::max(c.mma_cycles_f16, c.mma_cycles_bf16), 0};
    case Op::tensor_mma_i8:
      if (on_tensor_pipe(c, op)) return tensor_block(c, c.tensor_flops_per_core_per_cycle_i8);
      return {c.mma_cycles_f16, c.mma_cycles_f16, 0};
    case Op::tensor_mma_f32:
      return {c.mma_cycles_f32, c.mma_cycles_f32, 0};
  }
  return {};
}

// What the chip delivers to one resident threadgroup, in seconds per scheduler-cycle of its work:
// the core issues `schedulers` per cycle, split evenly among resident threadgroups. Latency
// hiding is applied to the cycles themselves (latency_hidden_cycles).
double seconds_per_cycle(const Chip& c, const Occupancy& occ) {
  const double share = c.schedulers_per_core / occ.threadgroups_per_core;
  return 1.0 / (share * c.clock_ghz * 1e9);
}

// Integer and FP16 instructions in issue slots beside FP32 on chips that
// co-issue them (Apple9+): the three streams overlap, at most two
// instructions per scheduler-cycle (assumption: dual issue from different
// simdgroups, as on M1/M2's FP16 dual-dispatch; metal-benchmarks 'ALU Layout').
double alu_issue_cycles(const Chip& c, const ThreadgroupCycles& t) {
  const double alu = t.issue - t.matrix;
  if (c.int_fp16_coissue <= 0) return alu;
  const double fp32 = alu - t.integer - t.half;
  return std::max({fp32, t.integer, t.half, alu / 2});
}

// A thread's registers past the per-thread maximum are spilled: the
// compiler keeps the hottest values and reloads the rest. Charged as one more
// issue slot per ALU instruction for the spilled fraction of the values
// (assumption: a spilled value is used as often as a kept one, and a reload
// costs one memory instruction).
double spill_factor(const Chip& c, double registers) {
  if (registers <= c.max_registers_per_thread) return 1;
  return 1 + (registers - c.max_registers_per_thread) / registers;
}

// Scheduler-cycles of a threadgroup's (or a simdgroup's) work at this
// residency: MMAs at the rate their latency hiding allows, the rest at the
// ALU rate; spills added to the ALU part.
ThreadgroupCycles latency_hidden_cycles(const Chip& c, const ThreadgroupCycles& t, const Occupancy& occ,
                                        double registers) {
  ThreadgroupCycles h = t;
  h.matrix = t.matrix / occ.mma_latency_hiding;
  h.issue = h.matrix + alu_issue_cycles(c, t) * spill_factor(c, registers) / occ.latency_hiding;
  h.transcendental = t.transcendental / occ.latency_hiding;
  h.tensor = t.tensor / occ.mma_latency_hiding;  // matmul2d blocks hide their latency like MMAs (assumption)
  return h;
}

// A threadgroup cannot finish before its busiest simdgroup, which gets a
// 1/simdgroups share of the threadgroup's issue rate.
double with_busiest(double total, double busiest, double simdgroups) { return std::max(total, busiest * simdgroups); }

// The busiest simdgroup's ops of a class; an even share of the threadgroup's
// when the profile did not record them per simdgroup.
OpCounts busiest_simdgroup_ops(const ThreadgroupClass& k, double simdgroups) {
  bool recorded = false;
  for (uint32_t i = 0; i < cpu::profile::kOpCount; ++i) recorded = recorded || k.max_simdgroup_ops[i] > 0;
  if (recorded) return k.max_simdgroup_ops;
  OpCounts share{};
  for (uint32_t i = 0; i < cpu::profile::kOpCount; ++i) share[i] = k.ops[i] / std::max(1.0, simdgroups);
  return share;
}

// The integer and FP16 ALU ops: they co-issue beside FP32 work on Apple9+.
bool is_integer(Op op) {
  switch (op) {
    case Op::int_add:
    case Op::int_mul:
    case Op::int_logic:
    case Op::int_cmp_select:
    case Op::int_divide:
    case Op::address:
    case Op::widen_bf16:
      return true;
    default:
      return false;
  }
}

bool is_half(Op op) {
  switch (op) {
    case Op::f16_add:
    case Op::f16_mul:
    case Op::f16_fma:
    case Op::f16_cmp_select:
    case Op::f16_minmax:
    case Op::f16_other:
      return true;
    default:
      return false;
  }
}

}  // namespace

ThreadgroupCycles threadgroup_cycles(const Chip& chip, const OpCounts& ops) {
  ThreadgroupCycles t;
  for (uint32_t i = 0; i < cpu::profile::kOpCount; ++i) {
    if (ops[i] == 0) continue;
    const OpCost cost = op_cost(chip, static_cast<Op>(i));
    t.issue += ops[i] * cost.issue;
    t.matrix += ops[i] * cost.matrix;
    t.transcendental += ops[i] * cost.pipe;
    t.tensor += ops[i] * cost.tensor;
    if (is_integer(static_cast<Op>(i))) t.integer += ops[i] * cost.issue;
    if (is_half(static_cast<Op>(i))) t.half += ops[i] * cost.issue;
  }
  return t;
}

namespace {

// `threadgroups` of `simdgroups` each resident per core: the simdgroups and
// the latency hiding they reach (latency_hiding.h).
Occupancy with_resident(const Chip& c, const LaunchWork& l, double simdgroups, uint32_t threadgroups,
                        std::string limit) {
  Occupancy occ;
  occ.threadgroups_per_core = std::max<uint32_t>(1, threadgroups);
  occ.limit = std::move(limit);
  occ.simdgroups_per_core = occ.threadgroups_per_core * simdgroups;
  occ.latency_hiding = alu_latency_hiding(c, occ.simdgroups_per_core);
  occ.mma_latency_hiding =
      mma_latency_hiding(c, occ.simdgroups_per_core, l.mma_chains > 0 ? static_cast<double>(l.mma_chains) : kDefaultMmaChains);
  return occ;
}

}  // namespace

Occupancy occupancy(const Chip& c, const LaunchWork& l) {
  // A launch missing one of the two sizes gets it from the other (SIMD width 32).
  const double threads =
      std::max<double>(1, l.threads_per_threadgroup ? l.threads_per_threadgroup : 32.0 * l.simdgroups_per_threadgroup);
  const double simdgroups = l.simdgroups_per_threadgroup ? l.simdgroups_per_threadgroup : std::ceil(threads / 32);
  const double tg_bytes = std::max<double>(1, l.threadgroup_memory_bytes);
  // Registers from the kernel's structure (0: not stated, then they do not limit).
  const double registers = std::min<double>(l.registers_per_thread, c.max_registers_per_thread);

  struct Limit {
    const char* name;
    double threadgroups;
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Limit> limits = {{"threads", std::floor(c.max_threads_per_core / threads)}};
  if (c.dynamic_caching > 0) {
    // Apple9+: registers and threadgroup memory come out of one on-chip pool
    // (the register file and the threadgroup memory of Apple7/8, taken as its
    // size: assumption), with no separate threadgroup-memory cap.
    limits.push_back({"on-chip memory (registers + threadgroup memory)",
                      std::floor((c.register_file_bytes_per_core + c.threadgroup_memory_bytes_per_core) /
                                 (tg_bytes + 4.0 * registers * threads))});
  } else {
    limits.push_back({"threadgroup memory", std::floor(c.threadgroup_memory_bytes_per_core / tg_bytes)});
    limits.push_back({"registers", registers > 0
                                       ? std::floor(register_limited_threads_per_core(c, registers) / threads)
                                       : inf});
  }
  const Limit* tightest = &limits[0];
  for (const Limit& lim : limits)
    if (lim.threadgroups < tightest->threadgroups) tightest = &lim;

  // At least one: a threadgroup over a per-core limit still runs (it spills), just alone.
  return with_resident(c, l, simdgroups, static_cast<uint32_t>(std::clamp(tightest->threadgroups, 1.0, 1e9)),
                       tightest->name);
}

double dispatch_makespan(std::span<const ThreadgroupRun> runs, uint64_t slots, bool exact) {
  uint64_t total = 0;
  for (const ThreadgroupRun& r : runs) total += r.count;
  if (total == 0 || slots == 0) return 0;

  // Finish time of each slot, as a min-heap. Slots beyond the grid never get work.
  std::vector<double> heap(std::min(slots, total), 0.0);
  const auto later = std::greater<double>();
  auto assign = [&](double seconds) {
    std::pop_heap(heap.begin(), heap.end(), later);
    heap.back() += seconds;
    std::push_heap(heap.begin(), heap.end(), later);
  };
  const bool aggregate = !exact && total > 1'000'000;
  const uint64_t n = heap.size();
  for (const ThreadgroupRun& run : runs) {
    uint64_t left = run.count;
    while (left > 0) {
      if (aggregate && left >= n) {
        // Once finish times are within one duration of each other, the next
        // n threadgroups land one per slot, so whole rounds add k * duration
        // to every slot (adding a constant keeps the heap valid).
        const auto [lo, hi] = std::minmax_element(heap.begin(), heap.end());
        if (*hi - *lo <= run.seconds) {
          const uint64_t rounds = left / n;
          for (double& t : heap) t += static_cast<double>(rounds) * run.seconds;
          left -= rounds * n;
          continue;
        }
        for (uint64_t i = 0; i < n; ++i) assign(run.seconds);  // converge, then retry
        left -= n;
        continue;
      }
      assign(run.seconds);
      --left;
    }
  }
  return *std::max_element(heap.begin(), heap.end());
}

LaunchPrediction predict_launch(const Chip& c, const LaunchWork& l) {
  LaunchPrediction p;
  p.kernel = l.kernel;
  const Occupancy occ = occupancy(c, l);
  p.threadgroups_per_core = occ.threadgroups_per_core;
  p.occupancy_limit = occ.limit;
  p.simdgroups_per_core = occ.simdgroups_per_core;
  p.latency_hiding = occ.latency_hiding;
  p.mma_latency_hiding = occ.mma_latency_hiding;

  // Without sampled classes, every threadgroup does an equal share of the launch.
  std::vector<ThreadgroupClass> classes = l.classes;
  if (classes.empty() && l.threadgroups > 0) {
    ThreadgroupClass all;
    all.threadgroups = l.threadgroups;
    for (uint32_t i = 0; i < cpu::profile::kOpCount; ++i) all.ops[i] = l.ops[i] / l.threadgroups;
    classes.push_back(all);
  }

  const double simdgroups = occ.simdgroups_per_core / occ.threadgroups_per_core;
  const double registers = l.registers_per_thread;
  // Seconds one threadgroup of class k keeps each resource busy at residency `o`.
  struct ClassSeconds {
    double issue, matrix, transcendental, tensor;
    bool chain_longer;  // the busiest simdgroup's own chain set `issue`
  };
  // A lone simdgroup on its scheduler hides only its own instructions'
  // latency (the ILP the tables assume), and none of its loads' (load_latency.h).
  Occupancy solo;
  solo.latency_hiding = alu_latency_hiding(c, c.schedulers_per_core);
  solo.mma_latency_hiding = mma_latency_hiding(
      c, c.schedulers_per_core, l.mma_chains > 0 ? static_cast<double>(l.mma_chains) : kDefaultMmaChains);
  const double load_latency = mean_load_latency_seconds(c, l);
  auto class_seconds = [&](const ThreadgroupClass& k, const Occupancy& o) {
    const double spc = seconds_per_cycle(c, o);
    const ThreadgroupCycles t = latency_hidden_cycles(c, threadgroup_cycles(c, k.ops), o, registers);
    const ThreadgroupCycles busiest =
        latency_hidden_cycles(c, threadgroup_cycles(c, k.max_simdgroup_ops), o, registers);
    // A threadgroup lasts at least as long as its busiest simdgroup's own
    // dependent chain: its instructions at a lone simdgroup's rate plus the
    // waits for its device loads. With enough resident simdgroups the core's
    // shared issue rate is the longer of the two and the waits are hidden.
    const OpCounts simdgroup_ops = busiest_simdgroup_ops(k, simdgroups);
    const double chain =
        latency_hidden_cycles(c, threadgroup_cycles(c, simdgroup_ops), solo, registers).issue / (c.clock_ghz * 1e9) +
        load_wait_seconds(simdgroup_ops, load_latency);
    const double shared = with_busiest(t.issue, busiest.issue, simdgroups) * spc;
    // A simdgroup feeds its own partition's accelerator share, like its own
    // scheduler: the busiest simdgroup bounds the tensor pipe too.
    return ClassSeconds{std::max(shared, chain),
                        with_busiest(t.matrix, busiest.matrix, simdgroups) * spc,
                        with_busiest(t.transcendental, busiest.transcendental, simdgroups) * spc,
                        with_busiest(t.tensor, busiest.tensor, simdgroups) * spc, chain > shared};
  };
  std::vector<ThreadgroupRun> both, issue, matrix_issue, matrix, pipe, tensor;
  bool chain_limited = false;
  uint64_t total = 0;
  bool any_tensor = false;
  for (const ThreadgroupClass& k : classes) {
    const auto [i, m, x, n, chain_longer] = class_seconds(k, occ);
    chain_limited = chain_limited || chain_longer;  // at full residency; the last wave's tail is not the launch
    // The complex pipe and the tensor pipe run beside the issue slots: a
    // threadgroup takes the longest of the three.
    both.push_back({k.threadgroups, std::max({i, x, n})});
    issue.push_back({k.threadgroups, i});
    matrix_issue.push_back({k.threadgroups, m});
    matrix.push_back({k.threadgroups, std::max(m, n)});
    pipe.push_back({k.threadgroups, x});
    tensor.push_back({k.threadgroups, n});
    any_tensor = any_tensor || n > 0;
    total += k.threadgroups;
  }
  const uint64_t slots = static_cast<uint64_t>(c.gpu_cores) * occ.threadgroups_per_core;
  double overlapped = dispatch_makespan(both, slots);
  p.compute_seconds = dispatch_makespan(issue, slots);
  double matrix_issue_seconds = dispatch_makespan(matrix_issue, slots);
  p.transcendental_seconds = dispatch_makespan(pipe, slots);
  // Without tensor-pipe work (every chip but M5, every kernel without
  // matmul2d) the matrix work is the MMAs' issue cycles: skip two makespans.
  p.tensor_seconds = any_tensor ? dispatch_makespan(tensor, slots) : 0;
  p.matrix_seconds = any_tensor ? dispatch_makespan(matrix, slots) : matrix_issue_seconds;

  // A partial last wave: its threadgroups share their cores with fewer
  // others, so each gets a larger share of the issue rate, down to the rate
  // its lower residency still hides latency at (metal-benchmarks' ILP
  // tables). The last threadgroup in grid order is credited the difference.
  if (total > 0 && !classes.empty()) {
    const uint64_t in_last_round = total % slots;
    const uint32_t resident_in_tail =
        static_cast<uint32_t>((in_last_round + static_cast<uint64_t>(c.gpu_cores) - 1) / static_cast<uint64_t>(c.gpu_cores));
    if (in_last_round > 0 && resident_in_tail < occ.threadgroups_per_core) {
      const Occupancy tail = with_resident(c, l, simdgroups, resident_in_tail, occ.limit);
      const ClassSeconds full_s = class_seconds(classes.back(), occ);
      const ClassSeconds tail_s = class_seconds(classes.back(), tail);
      auto credit = [](double& makespan, double full, double shorter) {
        makespan = std::max(0.0, makespan - std::max(0.0, full - shorter));
      };
      credit(overlapped, std::max({full_s.issue, full_s.transcendental, full_s.tensor}),
             std::max({tail_s.issue, tail_s.transcendental, tail_s.tensor}));
      credit(p.compute_seconds, full_s.issue, tail_s.issue);
      credit(matrix_issue_seconds, full_s.matrix, tail_s.matrix);
      credit(p.transcendental_seconds, full_s.transcendental, tail_s.transcendental);
      if (any_tensor) credit(p.tensor_seconds, full_s.tensor, tail_s.tensor);
      if (any_tensor)
        credit(p.matrix_seconds, std::max(full_s.matrix, full_s.tensor), std::max(tail_s.matrix, tail_s.tensor));
      else
        p.matrix_seconds = matrix_issue_seconds;
    }
  }
  p.waves = static_cast<double>(total) / static_cast<double>(slots);

  // Compulsory bytes come from DRAM once, at the rate a streaming read
  // sustains (kDramStreamingFraction); every byte past the core's L1
  // passes through the L2 / system-level cache. A threadgroup's re-reads of a
  // line it already read are L1 hits (when the profile measured them; their
  // issue slots are counted as load instructions); writes all go out.
  const double past_l1 = l.device_bytes_read_past_l1 > 0
                             ? static_cast<double>(std::min(l.device_bytes_read_past_l1, l.device_bytes_read))
                             : static_cast<double>(l.device_bytes_read);
  p.device_memory_seconds =
      std::max(static_cast<double>(l.device_bytes_unique) / (streaming_dram_bandwidth_gbs(c) * 1e9),
               (past_l1 + static_cast<double>(l.device_bytes_written)) / (c.cache_bandwidth_gbs * 1e9));
  p.threadgroup_memory_seconds = static_cast<double>(l.threadgroup_bytes_read + l.threadgroup_bytes_written) /
                                 (c.threadgroup_bandwidth_bytes_per_cycle_per_core * c.gpu_cores * c.clock_ghz * 1e9);

  // Roofline: the resources overlap perfectly, the slowest one sets the time.
  const double on_cores = std::max({overlapped, p.compute_seconds, p.transcendental_seconds, p.tensor_seconds});
  p.seconds = std::max({on_cores, p.device_memory_seconds, p.threadgroup_memory_seconds});
  if (p.seconds == 0) {
    p.bound = Bound::compute;
  } else if (p.seconds == p.device_memory_seconds) {
    p.bound = Bound::device_memory;
  } else if (p.seconds == p.threadgroup_memory_seconds) {
    p.bound = Bound::threadgroup_memory;
  } else if (std::min(occ.latency_hiding, occ.mma_latency_hiding) < 0.5 || chain_limited) {
    // Most of the core time would vanish with more resident simdgroups, or a
    // simdgroup's own chain of instructions and load waits outlasts its share.
    p.bound = Bound::latency;
  } else if (p.tensor_seconds > p.compute_seconds && p.tensor_seconds >= p.transcendental_seconds) {
    p.bound = Bound::tensor;  // the Neural Accelerators outlast the issue slots and the complex pipe
  } else if (p.transcendental_seconds > p.compute_seconds) {
    p.bound = Bound::transcendental;
  } else if (2 * matrix_issue_seconds >= p.compute_seconds) {
    p.bound = Bound::matrix;  // MMAs are most of the issue time
  } else {
    p.bound = Bound::compute;
  }
  return p;
}

double peak_flops(const Chip& c, const KernelWork& work) {
  double counted = 0, half_mma = 0, float_mma = 0, tensor_seconds = 0, on_tensor = 0;
  for (const LaunchWork& l : work.launches) {
    counted += counted_flops(l);
    half_mma += l.op(Op::mma_f16_f32) + l.op(Op::mma_f16_f16) + l.op(Op::mma_bf16_f32) + l.op(Op::mma_bf16_bf16);
    float_mma += l.op(Op::mma_f32_f32) + l.op(Op::tensor_mma_f32);
    for (Op op : {Op::tensor_mma_f16, Op::tensor_mma_i8}) {
      if (on_tensor_pipe(c, op)) {
        on_tensor += kBlockFlops * l.op(op);
        tensor_seconds += kBlockFlops * l.op(op) / peak_tensor_flops(c, op);
      } else {
        half_mma += l.op(op);  // on the shader ALUs as half MMAs
      }
    }
  }
  const double alu_roof = peak_flops(c, half_mma > float_mma);
  if (on_tensor <= 0) return alu_roof;
  // Two roofs side by side: the fastest this mix of work can go keeps the
  // busier of the two saturated.
  const double on_alu = std::max(0.0, counted - on_tensor);
  return (on_tensor + on_alu) / std::max(tensor_seconds, on_alu / alu_roof);
}

Prediction predict(const Chip& chip, const KernelWork& work) {
  Prediction p;
  p.chip = chip.name;
  double counted = 0, unique_bytes = 0, longest = -1;
  for (const LaunchWork& l : work.launches) {
    LaunchPrediction lp = predict_launch(chip, l);
    p.seconds += lp.seconds;
    if (lp.seconds > longest) {
      longest = lp.seconds;
      p.bound = lp.bound;
    }
    p.launches.push_back(std::move(lp));
    counted += counted_flops(l);
    unique_bytes += static_cast<double>(l.device_bytes_unique);
  }
  if (p.seconds <= 0) return p;
  const double flops = work.useful_flops > 0 ? work.useful_flops : counted;
  p.tflops = flops / p.seconds / 1e12;
  p.utilization = flops / p.seconds / peak_flops(chip, work);
  p.bandwidth_gbs = unique_bytes / p.seconds / 1e9;
  p.bandwidth_utilization = p.bandwidth_gbs / chip.dram_bandwidth_gbs;
  return p;
}

}  // namespace mfagen::profile
