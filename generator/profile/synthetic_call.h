// The call a profile makes of a kernel at a shape, and its synthetic inputs:
// `mfagen profile` counts it and `mfagen bench` times it, so that a measured
// time and the model's prediction are of the same call on the same data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "mfagen/forward_dispatch.h"
#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"

namespace mfagen::profile {

// Contiguous BHSD; softcap 30 for softcap kernels; the shape's window for
// window kernels; a (Sq, Sk) mask broadcast over batch and heads; varlen:
// batch sequences of seq_q and seq_k rows, packed; paged: every sequence's
// seq_k keys in its own pages of kSyntheticPageSize keys.
inline constexpr uint64_t kSyntheticPageSize = 16;
ForwardCall synthetic_call(const plan::KernelPlan& kernel, const plan::CostShape& shape);

// Bytes for every tensor of the plan but scratch and params: q, k, v (and
// dO, out for backward) random in [-1, 1] from a fixed seed; lse as a
// softmax over the keys would give; masks let everything through; ALiBi
// slopes small; sink logits 0; cu_seqlens, block tables and cache lengths
// those of synthetic_call; score_mod / mask_mod scalars 1, captured tensors 0.
std::map<uint32_t, std::vector<std::byte>> synthetic_tensors(const DispatchPlan& dispatch,
                                                             const plan::KernelPlan& kernel,
                                                             const plan::CostShape& shape);

}  // namespace mfagen::profile
