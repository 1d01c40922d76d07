#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <tuple>

#include "attention_reference.h"
#include "device_tensor.h"
#include "packed_batch.h"
#include "mfagen/library.h"
#include "paged_cache.h"
#include "plan/dispatch_info.h"
#include "plan/kernel_plan.h"
#include "random_inputs.h"
#include "selftest/case_inputs.h"
#include "serving_harness.h"
#include "quantized_kv_harness.h"

namespace mfagen::test {
namespace {

// Pages for the case: each sequence's blocks get pages in a shuffled order
// among spare pages no one reads; with share_pages, sequence 1's first block
// is sequence 0's first page. Unused block table entries are -1 (never read).
reference::PagedCache make_cache(const ForwardCase& c) {
  reference::PagedCache cache;
  cache.page_size = c.page_size;
  cache.heads_kv = c.heads_kv;
  cache.cache_seqlens.assign(c.cache_lengths.begin(), c.cache_lengths.end());
  std::vector<uint64_t> blocks;
  for (uint32_t n : c.cache_lengths) blocks.push_back((n + c.page_size - 1) / c.page_size);
  cache.max_pages = std::max<uint64_t>(1, *std::max_element(blocks.begin(), blocks.end()));
  const bool share = c.share_pages && blocks.size() >= 2 && blocks[0] >= 1 && blocks[1] >= 1;
  const uint64_t needed = std::accumulate(blocks.begin(), blocks.end(), uint64_t(0)) - (share ? 1 : 0);
  cache.num_pages = needed + 3;  // spare pages
  std::vector<int32_t> order(cache.num_pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(uint32_t(c.seed * 13 + 1)));
  cache.block_table.assign(blocks.size() * cache.max_pages, -1);
  size_t next = 0;
  for (size_t b = 0; b < blocks.size(); ++b)
    for (uint64_t block = 0; block < blocks[b]; ++block)
      cache.block_table[b * cache.max_pages + block] =
          share && b == 1 && block == 0 ? cache.block_table[0] : order[next++];
  return cache;
}

}  // namespace

ForwardOutcome run_paged_case(const ForwardCase& given) {
  ForwardCase c = given;
  c.batch = c.cache_lengths.size();
  const reference::PagedCache cache = make_cache(c);
  const uint64_t longest_k = std::max<uint64_t>(1, *std::max_element(c.cache_lengths.begin(), c.cache_lengths.end()));
  // Queries: seq_q per sequence (dense), or packed with their own lengths.
  const bool packed = !c.varlen_q.empty();
  std::vector<uint32_t> q_lengths = packed ? c.varlen_q : std::vector<uint32_t>(c.batch, uint32_t(c.seq_q));
  std::vector<int32_t> cu_q = {0};
  for (uint32_t n : q_lengths) cu_q.push_back(cu_q.back() + int32_t(n));
  const uint64_t total_q = uint64_t(cu_q.back());
  if (packed) c.seq_q = std::max<uint64_t>(1, *std::max_element(q_lengths.begin(), q_lengths.end()));

  const CaseKernel kernel = compile_forward_kernel(c);
  const plan::KernelPlan& plan = kernel.plan;
  ForwardOutcome outcome;
  outcome.kernel_source = kernel.source;

  const reference::ElementType type = selftest::reference_type(c.dtype);
  const uint32_t d = plan.spec.head_dim, dv = plan.spec.head_dim_v;
  const uint64_t slots = cache.num_pages * c.page_size * c.heads_kv;
  // q: (B, Hq, Sq, D), or packed (total_q, Hq, D).
  const std::vector<double> q = reference::random_tensor(total_q * c.heads_q * d, c.seed * 3, type, c.q_scale);
  // The caches' slots: values in the dtype, or stored rows of a quantized format.
  const CaseKv k_slots = case_kv(c, slots, d, c.seed * 3 + 1, case_k_scale(c));
  const CaseKv v_slots = case_kv(c, slots, dv, c.seed * 3 + 2, case_v_scale(c));
  const std::vector<double>& k_pages = k_slots.values;
  const std::vector<double>& v_pages = v_slots.values;
  const std::vector<double> sinks = c.sinks ? case_sinks(c) : std::vector<double>{};
  const std::vector<double> slopes = c.alibi ? case_alibi_slopes(c) : std::vector<double>{};

  const AttentionShape shape{c.batch, c.heads_q, c.heads_kv, c.seq_q, longest_k};
  ForwardCall call;
  call.shape = shape;
  const KvFormat kv_format = case_kv_format(c);
  call.strides = packed ? packed_paged(shape, total_q, c.page_size, d, dv, kv_format)
                        : paged_kv(shape, c.page_size, d, dv, kv_format);
  if (packed) call.total_q = total_q;
  // A planned batch: the work split Library::plan_batch makes of the host's lengths.
  BatchPlan batch_plan;
  if (packed && c.plan_threadgroups) {
    KernelEntry entry;
    entry.name = plan.entry;
    entry.info = plan::forward_kernel_info(plan);
    entry.causal = c.causal == spec::Causal::none       ? CausalMode::none
                   : c.causal == spec::Causal::top_left ? CausalMode::top_left
                                                        : CausalMode::bottom_right;
    if (c.window) std::tie(call.window_left, call.window_right) = *c.window;
    Library::plan_batch(entry, call, cu_q, cache.cache_seqlens, batch_plan, c.plan_threadgroups);
    call.batch_plan = &batch_plan;
  }
  call.k_scale = case_k_scale(c);
  call.v_scale = case_v_scale(c);
  call.page_size = c.page_size;
  call.num_pages = cache.num_pages;
  call.max_pages = cache.max_pages;
  call.scale = c.scale;
  call.softcap = c.softcap;
  if (c.window) std::tie(call.window_left, call.window_right) = *c.window;
  call.alibi_per_batch = c.alibi_per_batch;
  call.splits = c.splits;
  check_paged_cache(cache.block_table.data(), cache.cache_seqlens.data(), c.batch, cache.max_pages, cache.num_pages,
                    c.page_size, longest_k);
  const DispatchPlan dispatch = plan_forward(plan::forward_kernel_info(plan), call);

  // q and out dense BHSD or packed; the caches contiguous (num_pages, page_size, Hkv, D).
  std::vector<std::byte> q_bytes =
      packed ? device_tensor(q, 1, 1, total_q * c.heads_q, d, {0, 0, d}, type, dispatch.buffer("q")->bytes)
             : device_tensor(q, c.batch, c.heads_q, c.seq_q, d, call.strides.q, type, dispatch.buffer("q")->bytes);
  const uint64_t k_row = kv_row_units(kv_format, d), v_row = kv_row_units(kv_format, dv);
  std::vector<std::byte> k_bytes = case_kv_buffer(c, k_slots, 1, 1, slots, d, {0, 0, k_row}, dispatch.buffer("k")->bytes);
  std::vector<std::byte> v_bytes = case_kv_buffer(c, v_slots, 1, 1, slots, dv, {0, 0, v_row}, dispatch.buffer("v")->bytes);
  std::vector<std::byte> out(dispatch.buffer("out")->bytes, std::byte{0x7f});  // garbage: every element must be written
  std::vector<float> lse(total_q * c.heads_q, 12345.0f);
  std::vector<int32_t> table = cache.block_table, lengths = cache.cache_seqlens, cu_q_buffer = cu_q;
  std::vector<float> sink_values(sinks.begin(), sinks.end()), slope_values(slopes.begin(), slopes.end());
  std::map<uint32_t, std::span<std::byte>> tensors = {
      {plan::kQIndex, q_bytes}, {plan::kKIndex, k_bytes}, {plan::kVIndex, v_bytes}, {plan::kOutIndex, out},
      {plan::kBlockTableIndex, std::as_writable_bytes(std::span(table))},
      {plan::kCacheSeqlensIndex, std::as_writable_bytes(std::span(lengths))}};
  if (packed) tensors[plan::kCuSeqlensQIndex] = std::as_writable_bytes(std::span(cu_q_buffer));
  CaseModInputs mods = case_mod_inputs(c);  // score_mod / mask_mod inputs
  mods.bind(tensors);
  if (call.batch_plan) {
    tensors[plan::kWorkItemsIndex] = std::as_writable_bytes(std::span(batch_plan.work));
    tensors[plan::kMergeItemsIndex] = std::as_writable_bytes(std::span(batch_plan.merges));
  }
  if (c.lse) tensors[plan::kLseIndex] = std::as_writable_bytes(std::span(lse));
  if (c.sinks) tensors[plan::kSinksIndex] = std::as_writable_bytes(std::span(sink_values));
  if (c.alibi) tensors[plan::kAlibiIndex] = std::as_writable_bytes(std::span(slope_values));
  outcome.dispatch = cpu::execute(*kernel.module, dispatch, tensors, {}, {}, c.tensor_layout_seed);
  for (const KernelLaunch& l : dispatch.launches)
    if (l.entry == plan.entry && plan.spec.kind == spec::Kind::decode) outcome.splits = l.threadgroups[0];
  if (call.batch_plan) outcome.splits = batch_plan.merge_count;

  // Each batch entry: its queries against the keys gathered from its pages.
  const std::vector<float> got = packed ? read_tensor(out, 1, 1, total_q * c.heads_q, dv, {0, 0, dv}, type)
                                        : read_tensor(out, c.batch, c.heads_q, c.seq_q, dv, call.strides.out, type);
  outcome.out_values = got;
  outcome.lse_values = lse;
  outcome.out = {true, 0, 0, 0, ""};
  outcome.lse = {true, 0, 0, 0, c.lse ? "" : "no lse"};
  reference::AttentionProblem options = case_options(c, d, dv);
  options.sinks = sinks;
  options.alibi_slopes = slopes;
  const std::vector<double> wide_out(got.begin(), got.end());
  for (uint64_t b = 0; b < c.batch; ++b) {
    reference::AttentionProblem p = reference::entry_options(options, c.batch, b);
    p.seq_q = q_lengths[b];
    p.seq_k = c.cache_lengths[b];
    if (p.seq_q == 0) continue;  // nothing to judge (and nothing may be written: the detectors would say)
    const uint64_t q_rows = c.heads_q * p.seq_q, start = uint64_t(cu_q[b]);
    // Sequence b's rows as a dense (1, Hq, Sq_b, C) tensor.
    const auto rows_of = [&](const std::vector<double>& t, uint64_t columns) {
      return packed ? reference::unpack_rows(t, c.heads_q, columns, start, p.seq_q)
                    : std::vector<double>(t.begin() + b * q_rows * columns, t.begin() + (b + 1) * q_rows * columns);
    };
    p.q = rows_of(q, d);
    p.k = reference::gather_sequence(k_pages, cache, d, b);
    p.v = reference::gather_sequence(v_pages, cache, dv, b);
    const reference::AttentionResult expected = reference::reference_attention(p);
    const reference::AttentionResult naive = reference::naive_attention_in_dtype(with_kv_in(p, type), type);
    const std::vector<double> got_b = rows_of(wide_out, dv);
    merge(outcome.out,
          reference::check_output(std::vector<float>(got_b.begin(), got_b.end()), expected, naive, type, p), b);
    if (!c.lse) continue;
    std::vector<float> lse_b;  // (B, Hq, Sq) or (Hq, total_q) -> (1, Hq, Sq_b)
    for (uint64_t h = 0; h < c.heads_q; ++h)
      for (uint64_t i = 0; i < p.seq_q; ++i)
        lse_b.push_back(packed ? lse[h * total_q + start + i] : lse[(b * c.heads_q + h) * p.seq_q + i]);
    merge(outcome.lse, reference::check_lse(lse_b, expected, p), b);
  }
  return outcome;
}

}  // namespace mfagen::test
