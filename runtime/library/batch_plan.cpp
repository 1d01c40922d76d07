// Library::plan_batch: the work split of a serving step's packed queries on a
// paged cache (DESIGN.md section 13), computed once per step from the host's
// cu_seqlens_q and cache_seqlens and reused by every layer's call.
#include <algorithm>
#include <limits>
#include <string>

#include "mfagen/library.h"

namespace mfagen {
namespace {

// A split covers at least this many key blocks: shorter ones would cost more
// in partial rows and the merge than they gain in parallelism (assumption).
constexpr uint64_t kMinSplitBlocks = 4;

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

void Library::plan_batch(const KernelEntry& kernel, const ForwardCall& call, std::span<const int32_t> cu_seqlens_q,
                         std::span<const int32_t> cache_seqlens, BatchPlan& plan, uint32_t threadgroups) {
  const ForwardKernelInfo& info = kernel.info;
  if (!info.planned_batches)
    throw DispatchError("kernel " + kernel.name + " runs no planned batch (only packed queries on a paged cache do)");
  const AttentionShape& s = call.shape;
  check_cu_seqlens(cu_seqlens_q.data(), cu_seqlens_q.size(), s.batch, call.total_q, s.seq_q, "cu_seqlens_q");
  if (cache_seqlens.size() != s.batch)
    throw DispatchError("cache_seqlens has " + std::to_string(cache_seqlens.size()) + " entries; the batch has " +
                        std::to_string(s.batch));
  plan.work.clear();
  plan.merges.clear();
  plan.partial_slots = 0;
  plan.gqa_group = 0;

  // Each (sequence, query block) and the keys it sees, as the kernel bounds them.
  const int64_t bq = info.block_q, bk = info.block_k;
  // The q heads of a GQA group read one kv head: a sequence whose queries of
  // the whole group fit one query block (a decode) takes the group's (q head,
  // query) pairs as its rows, so that its K and V are read once per group
  // rather than once per q head, as the split-K decode kernel does. Its item's
  // heads_q threadgroups are then up to `group` slices of each kv head's keys.
  const int64_t group = s.heads_kv > 0 && s.heads_q % s.heads_kv == 0 ? int64_t(s.heads_q / s.heads_kv) : 1;
  uint64_t total_blocks = 0;  // key blocks of one threadgroup per item, summed
  for (uint64_t b = 0; b < s.batch; ++b) {
    const int64_t sq = cu_seqlens_q[b + 1] - cu_seqlens_q[b];
    const int64_t sk = std::clamp<int64_t>(cache_seqlens[b], 0, int64_t(s.seq_k));
    const int64_t offset = kernel.causal == CausalMode::top_left ? 0 : sk - sq;
    const bool gqa_rows = group > 1 && sq * group <= bq;
    for (int64_t q_block = 0; q_block * bq < sq; ++q_block) {
      const int64_t first = q_block * bq, last = std::min(first + bq, sq) - 1;
      int64_t key_begin = 0, key_end = sk;
      if (kernel.causal != CausalMode::none) key_end = std::min(key_end, last + offset + 1);
      if (info.window && call.window_left >= 0) key_begin = std::max(key_begin, first + offset - call.window_left);
      if (info.window && call.window_right >= 0) key_end = std::min(key_end, last + offset + call.window_right + 1);
      key_end = std::max(key_end, key_begin);
      const int64_t blocks = int64_t(div_up(uint64_t(key_end - key_begin), uint64_t(bk)));
      const int32_t slices = gqa_rows ? int32_t(std::clamp<int64_t>(blocks, 1, group)) : 0;
      plan.work.push_back({int32_t(b), int32_t(q_block), int32_t(key_begin), int32_t(key_end), -1, 0, 1, slices});
      if (gqa_rows) plan.gqa_group = uint64_t(group);
      total_blocks += div_up(uint64_t(blocks), uint64_t(std::max(slices, 1)));
    }
  }

  // Splits: about `threadgroups` items in all (per q head), none shorter than
  // kMinSplitBlocks key blocks per threadgroup. A packed item's slices are
  // splits too: each writes partial rows that the merge combines.
  const uint64_t items_per_head = std::max<uint64_t>(1, threadgroups / std::max<uint64_t>(1, s.heads_q));
  const uint64_t budget = std::max(kMinSplitBlocks, div_up(total_blocks, items_per_head));
  const size_t blocks = plan.work.size();
  for (size_t i = 0; i < blocks; ++i) {
    BatchWork& w = plan.work[i];
    const uint64_t keys = uint64_t(w.key_end - w.key_begin);
    const uint64_t slices = uint64_t(std::max(w.slices, 1));
    const uint64_t per_threadgroup = div_up(div_up(keys, uint64_t(bk)), slices);  // key blocks
    const bool too_long = per_threadgroup > budget;
    if (!too_long && slices == 1) continue;
    const uint64_t split_keys = too_long ? div_up(div_up(keys, div_up(per_threadgroup, budget)), uint64_t(bk)) * bk : keys;
    const int32_t splits = too_long ? int32_t(div_up(keys, split_keys)) : 1;
    const int32_t partials = splits * int32_t(slices);  // per (row, q head): every split's slices, in order
    const int64_t sq = cu_seqlens_q[w.batch + 1] - cu_seqlens_q[w.batch];
    const int32_t rows = int32_t(std::min<int64_t>(bq, sq - int64_t(w.q_block) * bq));
    const BatchMerge merge{w.batch, w.q_block, rows, partials, int32_t(plan.partial_slots)};
    plan.merges.push_back(merge);
    const BatchWork whole = w;
    for (int32_t split = 0; split < splits; ++split) {
      const int32_t begin = whole.key_begin + split * int32_t(split_keys);
      const BatchWork part{whole.batch,   whole.q_block,
                           begin,         std::min<int32_t>(whole.key_end, begin + int32_t(split_keys)),
                           merge.partial, split * int32_t(slices),
                           partials,      whole.slices};
      if (split == 0) plan.work[i] = part;
      else plan.work.push_back(part);
    }
    plan.partial_slots += uint64_t(rows) * s.heads_q * uint64_t(partials);
    if (plan.partial_slots > uint64_t(std::numeric_limits<int32_t>::max()))
      throw DispatchError("plan_batch: the split blocks' partial rows pass 2^31 slots; give plan_batch fewer threadgroups");
  }
  // The longest work per threadgroup first, so that the launch does not end
  // on a long tail; ties in planning order.
  const auto threadgroup_keys = [](const BatchWork& w) {
    return (int64_t(w.key_end) - w.key_begin + std::max(w.slices, 1) - 1) / std::max(w.slices, 1);
  };
  std::stable_sort(plan.work.begin(), plan.work.end(), [&](const BatchWork& a, const BatchWork& b) {
    return threadgroup_keys(a) > threadgroup_keys(b);
  });
  if (plan.work.empty())  // no queries at all: one item past every sequence's queries (it returns at once)
    plan.work.push_back({0, int32_t(std::numeric_limits<int32_t>::max() / bq), 0, 0, -1, 0, 1, 0});
  plan.merge_count = uint32_t(plan.merges.size());
  if (plan.merges.empty()) plan.merges.push_back({});  // a buffer to bind; the merge launch reads none
}

}  // namespace mfagen
