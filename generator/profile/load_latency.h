// How long a simdgroup waits for its device loads when nothing else on its
// core hides the wait (DESIGN.md section 14, docs/cost_model.md "Load
// latency"). Occupancy hides latency by switching to other simdgroups; with
// few resident simdgroups (a grid smaller than the GPU, or one threadgroup of
// four simdgroups per core walking 16K keys) the simdgroup's own dependent
// chain, its instructions plus the waits for its loads, is what bounds a
// threadgroup. The same rule for every kernel, generated or not.
#pragma once

#include "profile/chip.h"
#include "profile/kernel_work.h"

namespace mfagen::profile {

// Device load instructions a simdgroup keeps in flight before it must wait for
// the first of them (assumption: the same 4 independent operations per thread
// the ALU latency-hiding table assumes, latency_hiding.h; a loop that loads a
// tile then uses it issues more, a dependent walk fewer).
inline constexpr double kLoadsInFlightPerSimdgroup = 4;

// Mean latency of one device load of this launch, seconds: the bytes it reads
// split by where they are served (L1 hits: re-reads within a threadgroup;
// L2: re-reads across threadgroups; DRAM: compulsory bytes), each at the
// chip's latency for that level. A launch without the L1 measurement is
// taken to miss L1 on every byte.
double mean_load_latency_seconds(const Chip& chip, const LaunchWork& launch);

// Seconds one simdgroup spends waiting on its device loads (`ops`: that
// simdgroup's counts) when none of the wait is hidden: its load instructions
// in groups of kLoadsInFlightPerSimdgroup, each group one mean latency.
double load_wait_seconds(const OpCounts& simdgroup_ops, double mean_latency_seconds);

}  // namespace mfagen::profile
