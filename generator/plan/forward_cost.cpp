#include "plan/forward_cost.h"

#include <algorithm>

namespace mfagen::plan {
namespace {

// Keys visible to query row i: [0, end) with end = clamp(i + offset + 1, 0, seq_k) under causal masking.
uint64_t visible_keys(const KernelPlan& plan, const CostShape& s, uint64_t row) {
  if (plan.spec.causal == spec::Causal::none) return s.seq_k;
  const int64_t offset = plan.spec.causal == spec::Causal::bottom_right ? int64_t(s.seq_k) - int64_t(s.seq_q) : 0;
  return uint64_t(std::clamp<int64_t>(int64_t(row) + offset + 1, 0, int64_t(s.seq_k)));
}

}  // namespace

ForwardCost forward_cost(const KernelPlan& plan, const CostShape& s) {
  ForwardCost c;
  const uint64_t e = spec::dtype_bytes(plan.spec.dtype);
  const uint64_t d = plan.spec.head_dim, dv = plan.spec.head_dim_v;
  const uint64_t q_blocks = (s.seq_q + plan.block_q - 1) / plan.block_q;
  const uint64_t k_blocks = (s.seq_k + plan.block_k - 1) / plan.block_k;
  const uint64_t heads = s.batch * s.heads_q;
  c.threadgroups = q_blocks * heads;

  double pairs_per_head = 0;
  for (uint64_t i = 0; i < s.seq_q; ++i) pairs_per_head += double(visible_keys(plan, s, i));
  c.visible_pairs = pairs_per_head * double(heads);
  c.flops = 2.0 * c.visible_pairs * double(d + dv);

  const uint64_t q_bytes = heads * s.seq_q * d * e;
  const uint64_t out_bytes = heads * s.seq_q * dv * e + (plan.spec.lse ? heads * s.seq_q * 4 : 0);
  c.min_device_bytes = q_bytes + out_bytes + s.batch * s.heads_kv * s.seq_k * (d + dv) * e;

  // Per query block: the kernel walks key blocks up to the last visible key
  // of its last row; each visited block reads its (possibly partial) keys.
  uint64_t kv_keys_read = 0;
  for (uint64_t b = 0; b < q_blocks; ++b) {
    const uint64_t last_row = std::min((b + 1) * plan.block_q, s.seq_q) - 1;
    const uint64_t key_end = visible_keys(plan, s, last_row);
    c.key_blocks_visited += (key_end + plan.block_k - 1) / plan.block_k;
    // stage_tile loads whole blocks (clipped at seq_k), also past key_end.
    kv_keys_read += std::min((key_end + plan.block_k - 1) / plan.block_k * plan.block_k, s.seq_k);
  }
  c.key_blocks_total = q_blocks * k_blocks * heads;
  c.key_blocks_visited *= heads;
  c.kernel_device_bytes = q_bytes + out_bytes + kv_keys_read * heads * (d + dv) * e;
  return c;
}

}  // namespace mfagen::plan
