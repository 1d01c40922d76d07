#include "plan/forward_cost.h"

#include <algorithm>

#include "plan/dispatch_info.h"

namespace mfagen::plan {
namespace {

struct KeyRange {
  int64_t begin = 0, end = 0;  // [begin, end), possibly empty
};

// Keys rows [first, last] may see: the kernel's loop bounds (causal and
// window rules; masks are per key and never shrink the range).
KeyRange visible_range(const KernelPlan& plan, const CostShape& s, int64_t first, int64_t last) {
  const spec::KernelSpec& k = plan.spec;
  const bool has_offset = k.causal != spec::Causal::none || k.window || k.alibi;
  const int64_t offset = has_offset && k.causal != spec::Causal::top_left ? int64_t(s.seq_k) - int64_t(s.seq_q) : 0;
  KeyRange r{0, int64_t(s.seq_k)};
  if (k.causal != spec::Causal::none) r.end = std::min(r.end, last + offset + 1);
  if (k.window && s.window_left >= 0) r.begin = std::max(r.begin, first + offset - s.window_left);
  if (k.window && s.window_right >= 0) r.end = std::min(r.end, last + offset + s.window_right + 1);
  r.end = std::max(r.end, r.begin);
  return r;
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
  for (uint64_t i = 0; i < s.seq_q; ++i) {
    const KeyRange r = visible_range(plan, s, int64_t(i), int64_t(i));
    pairs_per_head += double(r.end - r.begin);
  }
  c.visible_pairs = pairs_per_head * double(heads);
  c.flops = 2.0 * c.visible_pairs * double(d + dv);

  const uint64_t q_bytes = heads * s.seq_q * d * e;
  const uint64_t out_bytes = heads * s.seq_q * dv * e + (plan.spec.lse ? heads * s.seq_q * 4 : 0);
  const uint64_t key_bytes = kv_key_bytes(plan.spec);  // elements, or a quantized format's stored rows
  c.min_device_bytes = q_bytes + out_bytes + s.batch * s.heads_kv * s.seq_k * key_bytes;

  // Per query block: the kernel walks key blocks of block_k keys from the
  // first to the last key any of its rows sees, and reads exactly the keys of
  // that range (stage_tile zero-fills the rest of the last block).
  uint64_t kv_keys_read = 0;
  for (uint64_t b = 0; b < q_blocks; ++b) {
    const int64_t first = int64_t(b * plan.block_q), last = int64_t(std::min((b + 1) * plan.block_q, s.seq_q)) - 1;
    const KeyRange r = visible_range(plan, s, first, last);
    const uint64_t blocks = uint64_t(r.end - r.begin + plan.block_k - 1) / plan.block_k;
    c.key_blocks_visited += blocks;
    kv_keys_read += uint64_t(r.end - r.begin);
  }
  c.key_blocks_total = q_blocks * k_blocks * heads;
  c.key_blocks_visited *= heads;
  // Each key group loads its rows of q (the same rows): a GPU's cache serves
  // the later groups, but every load is counted as the kernel makes it.
  c.kernel_device_bytes = plan.key_groups * q_bytes + out_bytes + kv_keys_read * heads * key_bytes;
  return c;
}

ForwardCost forward_cost(const KernelPlan& plan, const CostShape& shape, std::span<const uint64_t> seq_q,
                         std::span<const uint64_t> seq_k) {
  ForwardCost sum;
  for (size_t b = 0; b < seq_q.size() && b < seq_k.size(); ++b) {
    CostShape one = shape;
    one.batch = 1, one.seq_q = seq_q[b], one.seq_k = seq_k[b];
    const ForwardCost c = forward_cost(plan, one);
    sum.threadgroups += c.threadgroups;
    sum.visible_pairs += c.visible_pairs;
    sum.flops += c.flops;
    sum.min_device_bytes += c.min_device_bytes;
    sum.kernel_device_bytes += c.kernel_device_bytes;
    sum.key_blocks_total += c.key_blocks_total;
    sum.key_blocks_visited += c.key_blocks_visited;
  }
  return sum;
}

namespace {

struct QueryRange {
  int64_t begin = 0, end = 0;
};

// Queries that may see a key of [first_key, last_key]: the dkdv kernel's loop
// bounds (causal and window rules).
QueryRange seeing_queries(const KernelPlan& plan, const CostShape& s, int64_t first_key, int64_t last_key) {
  const spec::KernelSpec& k = plan.spec;
  const bool has_offset = k.causal != spec::Causal::none || k.window || k.alibi;
  const int64_t offset = has_offset && k.causal != spec::Causal::top_left ? int64_t(s.seq_k) - int64_t(s.seq_q) : 0;
  QueryRange r{0, int64_t(s.seq_q)};
  if (k.causal != spec::Causal::none) r.begin = std::max(r.begin, first_key - offset);
  if (k.window && s.window_right >= 0) r.begin = std::max(r.begin, first_key - offset - s.window_right);
  if (k.window && s.window_left >= 0) r.end = std::min(r.end, last_key - offset + s.window_left + 1);
  r.end = std::max(r.end, r.begin);
  return r;
}

}  // namespace

BackwardCost backward_cost(const KernelPlan& plan, const CostShape& s) {
  BackwardCost c;
  const uint64_t e = spec::dtype_bytes(plan.spec.dtype);
  const uint64_t d = plan.spec.head_dim, dv = plan.spec.head_dim_v;
  const uint64_t q_heads = s.batch * s.heads_q;
  const uint64_t group = s.heads_q / s.heads_kv;

  // dQ kernel: per query block, the visible keys of K and V (K twice here).
  uint64_t dq_keys = 0;
  double pairs = 0;
  for (uint64_t b = 0; b * plan.block_q < s.seq_q; ++b) {
    const int64_t first = int64_t(b * plan.block_q), last = int64_t(std::min((b + 1) * plan.block_q, s.seq_q)) - 1;
    const KeyRange r = visible_range(plan, s, first, last);
    dq_keys += uint64_t(r.end - r.begin);
  }
  for (uint64_t i = 0; i < s.seq_q; ++i) {
    const KeyRange r = visible_range(plan, s, int64_t(i), int64_t(i));
    pairs += double(r.end - r.begin);
  }
  // dK/dV kernel: per key block and q head of its group, the queries that see
  // any of its keys (q twice here, dO once, lse and D per query).
  uint64_t dkdv_queries = 0;
  for (uint64_t b = 0; b * plan.block_k < s.seq_k; ++b) {
    const int64_t first_key = int64_t(b * plan.block_k);
    const int64_t last_key = int64_t(std::min((b + 1) * plan.block_k, s.seq_k)) - 1;
    const QueryRange r = seeing_queries(plan, s, first_key, last_key);
    const int64_t begin = r.begin, end = r.end;
    dkdv_queries += uint64_t(std::max<int64_t>(end - begin, 0));
  }
  c.flops = 2.0 * pairs * double(q_heads) * double(3 * d + 2 * dv);
  const uint64_t kv_once = s.batch * s.heads_kv * s.seq_k * (d + dv) * e;
  const uint64_t q_do_once = q_heads * s.seq_q * (d + dv) * e;
  const uint64_t rows = q_heads * s.seq_q * 4;  // lse or D, float
  const uint64_t preprocess = q_heads * s.seq_q * 2 * dv * e + rows;  // read out and dO, write D
  const uint64_t dkdv_reads = s.batch * s.heads_kv * group * dkdv_queries * ((d + dv) * e + 2 * 4);
  const uint64_t dq_reads = q_heads * dq_keys * (d + dv) * e;
  const uint64_t writes = kv_once + q_heads * s.seq_q * d * e;  // dK, dV, dQ
  c.fa2_model_bytes = preprocess + kv_once + dkdv_reads + q_do_once + 2 * rows + dq_reads + writes;
  c.kernel_device_bytes = c.fa2_model_bytes;
  if (!plan.resident_tiles)  // q and K staged a second time for dK and dQ
    c.kernel_device_bytes += s.batch * s.heads_kv * group * dkdv_queries * d * e + q_heads * dq_keys * d * e;
  return c;
}

}  // namespace mfagen::plan
