// The call a profile makes of a kernel at a shape, and its synthetic inputs:
// `mfagen profile` counts it and `mfagen bench` times it, so that a measured
// time and the model's prediction are of the same call on the same data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "mfagen/forward_dispatch.h"
#include "mfagen/library.h"
#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"
#include "profile/sequence_lengths.h"

namespace mfagen::profile {

// Contiguous BHSD; softcap 30 for softcap kernels; the shape's window for
// window kernels; a (Sq, Sk) mask broadcast over batch and heads; varlen:
// batch sequences of seq_q and seq_k rows, packed; paged: every sequence's
// seq_k keys in its own pages of kSyntheticPageSize keys.
inline constexpr uint64_t kSyntheticPageSize = 16;
ForwardCall synthetic_call(const plan::KernelPlan& kernel, const plan::CostShape& shape);

// Every sequence of a shape: batch x seq_q queries and batch x seq_k keys.
SequenceLengths uniform_lengths(const plan::CostShape& shape);

// The same with each sequence's own lengths (layout varlen or kv_cache
// paged; lengths.q and lengths.k of shape.batch entries, shape.seq_q and
// shape.seq_k their longest): varlen packs the sequences' rows one after the
// other; a paged cache gives sequence b ceil(k[b] / kSyntheticPageSize) pages
// of its own, after those of sequence b - 1 (num_pages their sum, at least 1).
ForwardCall synthetic_call(const plan::KernelPlan& kernel, const plan::CostShape& shape,
                           const SequenceLengths& lengths);

// cu_seqlens of the lengths: 0, l[0], l[0] + l[1], ... (int32, as kernels read them).
std::vector<int32_t> cumulative_lengths(const std::vector<uint64_t>& lengths);

// Kernels with planned_batches (packed queries on a paged cache): the batch
// plan `mfagen run` makes for these lengths (Library::plan_batch), into
// `plan`; `call.batch_plan` then points at it. Other kernels: nothing.
void plan_synthetic_batch(const KernelEntry& kernel, ForwardCall& call, const SequenceLengths& lengths,
                          BatchPlan& plan);

// Bytes for every tensor of the plan but scratch and params: q, k, v (and
// dO, out for backward) random in [-1, 1] from a fixed seed; lse as a
// softmax over the keys would give; masks let everything through; ALiBi
// slopes small; sink logits 0; cu_seqlens, block tables and cache lengths
// those of synthetic_call; score_mod / mask_mod scalars 1, captured tensors 0;
// a planned batch's work and merge items (when `batch_plan` is given).
std::map<uint32_t, std::vector<std::byte>> synthetic_tensors(const DispatchPlan& dispatch,
                                                             const plan::KernelPlan& kernel,
                                                             const plan::CostShape& shape);
std::map<uint32_t, std::vector<std::byte>> synthetic_tensors(const DispatchPlan& dispatch,
                                                             const plan::KernelPlan& kernel,
                                                             const plan::CostShape& shape,
                                                             const SequenceLengths& lengths,
                                                             const BatchPlan* batch_plan = nullptr);

}  // namespace mfagen::profile
