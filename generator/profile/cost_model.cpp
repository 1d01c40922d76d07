#include "profile/cost_model.h"

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
      return {1, 0, 0};  // assumption: a simdgroup runs in lockstep
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
// the core issues schedulers x latency_hiding per cycle, split evenly among resident threadgroups.
double seconds_per_cycle(const Chip& c, const Occupancy& occ) {
  const double share = c.schedulers_per_core * occ.latency_hiding / occ.threadgroups_per_core;
  return 1.0 / (share * c.clock_ghz * 1e9);
}

// A threadgroup cannot finish before its busiest simdgroup, which gets a
// 1/simdgroups share of the threadgroup's issue rate.
double with_busiest(double total, double busiest, double simdgroups) { return std::max(total, busiest * simdgroups); }

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
  }
  return t;
}

Occupancy occupancy(const Chip& c, const LaunchWork& l) {
  // A launch missing one of the two sizes gets it from the other (SIMD width 32).
  const double threads =
      std::max<double>(1, l.threads_per_threadgroup ? l.threads_per_threadgroup : 32.0 * l.simdgroups_per_threadgroup);
  const double simdgroups = l.simdgroups_per_threadgroup ? l.simdgroups_per_threadgroup : std::ceil(threads / 32);

  struct Limit {
    const char* name;
    double threadgroups;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Limit limits[] = {
      {"threadgroup memory",
       std::floor(c.threadgroup_memory_bytes_per_core / std::max<double>(1, l.threadgroup_memory_bytes))},
      // Registers never hold residency below the saturation point: "ALU
      // utilization maxes out at 24 simds/core, which is also the lowest
      // occupancy you can create by over-allocating registers" (metal-benchmarks;
      // the compiler spills instead). A kernel whose estimate exceeds what one
      // thread may use spills the rest too. Spill traffic is not modelled.
      {"registers", l.registers_per_thread > 0
                        ? std::max(std::floor(c.register_file_bytes_per_core /
                                              (4.0 * std::min<double>(l.registers_per_thread,
                                                                      c.max_registers_per_thread) *
                                               threads)),
                                   std::ceil(c.saturation_simdgroups_per_core / simdgroups))
                        : inf},
      {"threads", std::floor(c.max_threads_per_core / threads)},
  };
  const Limit* tightest = &limits[0];
  for (const Limit& lim : limits)
    if (lim.threadgroups < tightest->threadgroups) tightest = &lim;

  Occupancy occ;
  // At least one: a threadgroup over a per-core limit still runs (it spills), just alone.
  occ.threadgroups_per_core = static_cast<uint32_t>(std::clamp(tightest->threadgroups, 1.0, 1e9));
  occ.limit = tightest->name;
  occ.simdgroups_per_core = occ.threadgroups_per_core * simdgroups;
  occ.latency_hiding = std::min(1.0, occ.simdgroups_per_core / c.saturation_simdgroups_per_core);
  return occ;
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

  // Without sampled classes, every threadgroup does an equal share of the launch.
  std::vector<ThreadgroupClass> classes = l.classes;
  if (classes.empty() && l.threadgroups > 0) {
    ThreadgroupClass all;
    all.threadgroups = l.threadgroups;
    for (uint32_t i = 0; i < cpu::profile::kOpCount; ++i) all.ops[i] = l.ops[i] / l.threadgroups;
    classes.push_back(all);
  }

  const double simdgroups = occ.simdgroups_per_core / occ.threadgroups_per_core;
  const double spc = seconds_per_cycle(c, occ);
  std::vector<ThreadgroupRun> both, issue, matrix_issue, matrix, pipe, tensor;
  uint64_t total = 0;
  bool any_tensor = false;
  for (const ThreadgroupClass& k : classes) {
    const ThreadgroupCycles t = threadgroup_cycles(c, k.ops);
    const ThreadgroupCycles busiest = threadgroup_cycles(c, k.max_simdgroup_ops);
    const double i = with_busiest(t.issue, busiest.issue, simdgroups) * spc;
    const double m = with_busiest(t.matrix, busiest.matrix, simdgroups) * spc;
    const double x = with_busiest(t.transcendental, busiest.transcendental, simdgroups) * spc;
    // A simdgroup feeds its own partition's accelerator share, like its own
    // scheduler: the busiest simdgroup bounds the tensor pipe too.
    const double n = with_busiest(t.tensor, busiest.tensor, simdgroups) * spc;
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
  const double overlapped = dispatch_makespan(both, slots);
  p.compute_seconds = dispatch_makespan(issue, slots);
  const double matrix_issue_seconds = dispatch_makespan(matrix_issue, slots);
  p.transcendental_seconds = dispatch_makespan(pipe, slots);
  // Without tensor-pipe work (every chip but M5, every kernel without
  // matmul2d) the matrix work is the MMAs' issue cycles: skip two makespans.
  p.tensor_seconds = any_tensor ? dispatch_makespan(tensor, slots) : 0;
  p.matrix_seconds = any_tensor ? dispatch_makespan(matrix, slots) : matrix_issue_seconds;
  p.waves = static_cast<double>(total) / static_cast<double>(slots);

  // Compulsory bytes come from DRAM once; all requested bytes at least pass
  // through the caches.
  p.device_memory_seconds =
      std::max(static_cast<double>(l.device_bytes_unique) / (c.dram_bandwidth_gbs * 1e9),
               static_cast<double>(l.device_bytes_read + l.device_bytes_written) / (c.cache_bandwidth_gbs * 1e9));
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
  } else if (occ.latency_hiding < 0.5) {
    p.bound = Bound::latency;  // most of the core time would vanish with more resident simdgroups
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
