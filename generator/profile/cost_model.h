// The cost model of `mfagen profile` (DESIGN.md section 14, docs/cost_model.md):
// counted work (kernel_work.h) on one chip (chip.h) -> a predicted time
// (prediction.h). A roofline per launch: issue, transcendental pipe, tensor
// pipe (Neural Accelerators, M5), DRAM / cache and threadgroup memory bounds,
// with occupancy and the last wave's tail from a simulated dispatch. Always a
// model, never a measurement.
#pragma once

#include <cstdint>
#include <span>

#include "profile/chip.h"
#include "profile/kernel_work.h"
#include "profile/prediction.h"

namespace mfagen::profile {

Prediction predict(const Chip& chip, const KernelWork& work);
LaunchPrediction predict_launch(const Chip& chip, const LaunchWork& launch);

// FLOP/s of FMAs on every lane of every core (2 FLOPs per FMA).
double peak_fp32_flops(const Chip& chip);
// The shader ALUs' roof: FP16 when `half` (x fp16_rate).
double peak_flops(const Chip& chip, bool half);
// The Neural Accelerators' roof for matmul2d blocks of `op` (tensor_mma_f16
// or tensor_mma_i8; integer operations for the latter); 0 on chips without them.
double peak_tensor_flops(const Chip& chip, Op op);
// The roof `utilization` is measured against: the shader ALUs' (FP16 when
// most MMAs have half or bfloat operands), or, when some of the work runs on
// the Neural Accelerators, the fastest rate at which the two roofs together
// could run the kernel's counted FLOPs in the proportion it splits them.
double peak_flops(const Chip& chip, const KernelWork& work);

// Cycles one threadgroup keeps each resource busy, summed over its simdgroups
// (one scheduler-cycle = one simdgroup instruction slot).
struct ThreadgroupCycles {
  double issue = 0;           // every instruction's issue slots, MMAs included
  double matrix = 0;          // the MMA part of `issue` (matmul2d blocks included)
  double transcendental = 0;  // complex-pipe occupancy (exp2, rsqrt, divide, ...)
  double tensor = 0;          // tensor-pipe occupancy (matmul2d blocks on Neural Accelerators)
  double integer = 0;         // the integer part of `issue` (co-issues beside FP32 on Apple9+)
  double half = 0;            // the FP16 ALU part of `issue` (co-issues beside FP32 on Apple9+)
};
ThreadgroupCycles threadgroup_cycles(const Chip& chip, const OpCounts& ops);

// Residency of one launch's threadgroups on a core.
struct Occupancy {
  uint32_t threadgroups_per_core = 1;
  std::string limit;  // "threadgroup memory", "registers", "threads" or "on-chip memory (...)" (Apple9+)
  double simdgroups_per_core = 0;
  double latency_hiding = 1;      // fraction of the ALU issue rate reached (latency_hiding.h)
  double mma_latency_hiding = 1;  // fraction of the MMA rate reached (latency_hiding.h)
};
Occupancy occupancy(const Chip& chip, const LaunchWork& launch);

// Consecutive threadgroups of equal duration, in grid order.
struct ThreadgroupRun {
  uint64_t count = 0;
  double seconds = 0;  // each
};
// Greedy dispatch: each threadgroup, in grid order, goes to the slot that frees
// first; returns when the last one finishes. Grids above a million threadgroups
// advance whole rounds at once (same result up to rounding) unless `exact`.
double dispatch_makespan(std::span<const ThreadgroupRun> runs, uint64_t slots, bool exact = false);

}  // namespace mfagen::profile
