// How much of a core's issue rate a launch reaches at a given residency
// (DESIGN.md section 14, docs/cost_model.md "Occupancy and latency"). Two
// kinds of work hide latency differently:
//  * ALU work (FP32/FP16/integer, memory instructions, shuffles): the
//    metal-benchmarks ILP table, assuming 4 independent operations per thread
//    (the element-wise work over a fragment row tile every attention kernel
//    does: two elements per fragment, two or more fragments per row tile);
//  * simdgroup_matrix MMAs: a scheduler keeps its MMA pipe busy when the
//    simdgroups it holds have latency / throughput independent MMAs in flight.
// Registers limit residency on Apple7/8 through Asahi's occupancy table; on
// Apple9 and later Dynamic Caching shares one on-chip pool (cost_model.cpp).
// The same rules for every kernel, generated or not.
#pragma once

#include <cstdint>

#include "profile/chip.h"

namespace mfagen::profile {

// Independent MMA accumulator chains per simdgroup when a launch does not say
// (assumption: every flash-attention kernel updates at least two accumulator
// tiles between dependent MMAs, e.g. two 8-column tiles of S).
inline constexpr double kDefaultMmaChains = 2;

// 32-bit registers a generated kernel keeps beyond its fragment values: loop
// counters, pointers, row max and sum, indices (assumption; the planner counts
// fragments exactly, scalars are not counted). Peers' kernels get the same
// allowance on top of their tile-derived fragment count (tools/profile_peers).
inline constexpr uint32_t kScalarRegisterAllowance = 16;

// Fraction of the issue rate ALU work reaches with `simdgroups` resident per
// core: metal-benchmarks' FFMA table at ILP 4 (FP32 cycles per instruction
// 2.75 at 4 simds/core, 1.60 at 8, 1.02 at 88), normalised to the saturated
// rate and interpolated linearly; 1 from the chip's saturation_simdgroups_per_core
// (24: 'ALU utilization maxes out at 24 simds/core'); below 4, proportional.
double alu_latency_hiding(const Chip& chip, double simdgroups_per_core);

// Fraction of the MMA rate reached: min(1, simdgroups per scheduler x chains x
// throughput / latency) with the chip's MMA latency (metal-benchmarks ~36 cycles
// for ~18 of throughput).
double mma_latency_hiding(const Chip& chip, double simdgroups_per_core, double chains);

// Threads a core holds at `registers` 32-bit registers per thread with static
// register allocation (Apple7/8): Mesa's agx_performance.c occupancy table
// (half-registers -> threads: 104 -> 1024, 112 -> 896, 128 -> 832, 136 -> 768,
// 144 -> 704, 160 -> 640, 184 -> 576, 208 -> 512, 232 -> 448, 256 -> 384),
// derived from Metal's maxTotalThreadsPerThreadgroup. Above 128 registers the
// kernel spills and holds the 128-register residency. The table stops at 1024
// threads (the per-threadgroup maximum it was read through); at 52 registers
// or fewer the register file itself sets the count (register_file_bytes /
// (4 x registers), which the table's entries match within its granularity).
uint32_t register_limited_threads_per_core(const Chip& chip, double registers);

}  // namespace mfagen::profile
