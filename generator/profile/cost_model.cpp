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
  }
  return "unknown";
}

double peak_fp32_flops(const Chip& c) { return c.gpu_cores * c.fp32_lanes_per_core_per_cycle * 2 * c.clock_ghz * 1e9; }

double peak_flops(const Chip& c, bool half) { return peak_fp32_flops(c) * (half ? c.fp16_rate : 1.0); }

namespace {

// What one counted op costs a scheduler, in cycles: issue slots (MMAs
// included), the MMA part of them, and complex-pipe occupancy. The switch has
// no default so a new Op in profile_ops.h fails to compile (-Wswitch) until
// it is costed here. Sources of each constant: docs/cost_model.md.
struct OpCost {
  double issue = 0, matrix = 0, pipe = 0;
};

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
  std::vector<ThreadgroupRun> both, issue, matrix, pipe;
  uint64_t total = 0;
  for (const ThreadgroupClass& k : classes) {
    const ThreadgroupCycles t = threadgroup_cycles(c, k.ops);
    const ThreadgroupCycles busiest = threadgroup_cycles(c, k.max_simdgroup_ops);
    const double i = with_busiest(t.issue, busiest.issue, simdgroups) * spc;
    const double m = with_busiest(t.matrix, busiest.matrix, simdgroups) * spc;
    const double x = with_busiest(t.transcendental, busiest.transcendental, simdgroups) * spc;
    // The complex pipe runs beside the issue slots: a threadgroup takes the longer of the two.
    both.push_back({k.threadgroups, std::max(i, x)});
    issue.push_back({k.threadgroups, i});
    matrix.push_back({k.threadgroups, m});
    pipe.push_back({k.threadgroups, x});
    total += k.threadgroups;
  }
  const uint64_t slots = static_cast<uint64_t>(c.gpu_cores) * occ.threadgroups_per_core;
  const double overlapped = dispatch_makespan(both, slots);
  p.compute_seconds = dispatch_makespan(issue, slots);
  p.matrix_seconds = dispatch_makespan(matrix, slots);
  p.transcendental_seconds = dispatch_makespan(pipe, slots);
  p.waves = static_cast<double>(total) / static_cast<double>(slots);

  // Compulsory bytes come from DRAM once; all requested bytes at least pass
  // through the caches.
  p.device_memory_seconds =
      std::max(static_cast<double>(l.device_bytes_unique) / (c.dram_bandwidth_gbs * 1e9),
               static_cast<double>(l.device_bytes_read + l.device_bytes_written) / (c.cache_bandwidth_gbs * 1e9));
  p.threadgroup_memory_seconds = static_cast<double>(l.threadgroup_bytes_read + l.threadgroup_bytes_written) /
                                 (c.threadgroup_bandwidth_bytes_per_cycle_per_core * c.gpu_cores * c.clock_ghz * 1e9);

  // Roofline: the resources overlap perfectly, the slowest one sets the time.
  const double on_cores = std::max({overlapped, p.compute_seconds, p.transcendental_seconds});
  p.seconds = std::max({on_cores, p.device_memory_seconds, p.threadgroup_memory_seconds});
  if (p.seconds == 0) {
    p.bound = Bound::compute;
  } else if (p.seconds == p.device_memory_seconds) {
    p.bound = Bound::device_memory;
  } else if (p.seconds == p.threadgroup_memory_seconds) {
    p.bound = Bound::threadgroup_memory;
  } else if (occ.latency_hiding < 0.5) {
    p.bound = Bound::latency;  // most of the core time would vanish with more resident simdgroups
  } else if (p.transcendental_seconds > p.compute_seconds) {
    p.bound = Bound::transcendental;
  } else if (2 * p.matrix_seconds >= p.compute_seconds) {
    p.bound = Bound::matrix;  // MMAs are most of the issue time
  } else {
    p.bound = Bound::compute;
  }
  return p;
}

Prediction predict(const Chip& chip, const KernelWork& work) {
  Prediction p;
  p.chip = chip.name;
  double counted = 0, unique_bytes = 0, half_mma = 0, float_mma = 0, longest = -1;
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
    half_mma += l.op(Op::mma_f16_f32) + l.op(Op::mma_f16_f16) + l.op(Op::mma_bf16_f32) + l.op(Op::mma_bf16_bf16);
    float_mma += l.op(Op::mma_f32_f32);
  }
  if (p.seconds <= 0) return p;
  const double flops = work.useful_flops > 0 ? work.useful_flops : counted;
  p.tflops = flops / p.seconds / 1e12;
  p.utilization = flops / p.seconds / peak_flops(chip, half_mma > float_mma);
  p.bandwidth_gbs = unique_bytes / p.seconds / 1e9;
  p.bandwidth_utilization = p.bandwidth_gbs / chip.dram_bandwidth_gbs;
  return p;
}

}  // namespace mfagen::profile
