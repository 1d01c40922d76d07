// What one forward launch costs for a given shape: arithmetic, the minimum
// device traffic (every input read once, every output written once), the
// traffic this kernel's tiling moves (the FlashAttention IO model: K and V
// are re-read once per query block), and how many key blocks causal
// masking and sliding windows let the kernel skip. Used by `mfagen explain` and the figures.
#pragma once

#include <cstdint>
#include <span>

#include "plan/kernel_plan.h"

namespace mfagen::plan {

struct CostShape {
  uint64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_k = 1;
  int64_t window_left = -1, window_right = -1;  // window kernels only; -1 unbounded
};

struct ForwardCost {
  uint64_t threadgroups = 0;          // ceil(seq_q / block_q) * heads_q * batch
  double visible_pairs = 0;           // (query, key) pairs the mask lets through, all heads and batches
  double flops = 0;                   // 2 * visible pairs * (D + Dv): QK^T and PV multiply-adds
  uint64_t min_device_bytes = 0;      // q, k, v read once; out (and lse) written once
  uint64_t kernel_device_bytes = 0;   // q once per key group, out once, K and V once per visited key block per threadgroup
  uint64_t key_blocks_total = 0;      // key blocks over all threadgroups without skipping
  uint64_t key_blocks_visited = 0;    // key blocks the kernel loads and computes
};

ForwardCost forward_cost(const KernelPlan& plan, const CostShape& shape);

// A batch whose sequences have their own lengths (layout varlen, or a paged
// cache's cache_seqlens): the sum over sequences b of forward_cost at
// (1, Hq, Hkv, seq_q[b], seq_k[b]), heads and window from `shape` (its
// batch and lengths are ignored). min_device_bytes is then the IO model of
// the batch: each sequence's q and keys read once, its out and lse written once.
ForwardCost forward_cost(const KernelPlan& plan, const CostShape& shape, std::span<const uint64_t> seq_q,
                         std::span<const uint64_t> seq_k);

// The backward pass (kind backward; out and lse come from the forward).
struct BackwardCost {
  double flops = 0;                    // 2 * visible pairs * (2 D + 2 Dv + D): S, dP, dV, dK, dQ (S again in dq)
  uint64_t fa2_model_bytes = 0;        // FlashAttention-2's backward IO: each tensor block read once per pass
  uint64_t kernel_device_bytes = 0;    // this kernel: q (dkdv) and K (dq) staged twice unless resident_tiles
};

BackwardCost backward_cost(const KernelPlan& plan, const CostShape& shape);

}  // namespace mfagen::plan
