#include "mfagen/forward_dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "dispatch_checks.h"
#include "params_writer.h"

namespace mfagen {
namespace {

constexpr uint64_t kMaxSeq = std::numeric_limits<int32_t>::max();  // kernels index rows with int

using namespace dispatch_checks;

void check_call(const ForwardKernelInfo& kernel, const ForwardCall& call) {
  const AttentionShape& shape = call.shape;
  require(shape.batch >= 1 && shape.heads_q >= 1 && shape.heads_kv >= 1 && shape.seq_q >= 1 && shape.seq_k >= 1,
          "every dimension of the shape (batch, heads_q, heads_kv, seq_q, seq_k) must be at least 1");
  require(shape.seq_q <= kMaxSeq && shape.seq_k <= kMaxSeq, "seq_q and seq_k must be below 2^31");
  require(shape.batch <= UINT32_MAX && shape.heads_q <= UINT32_MAX && shape.heads_kv <= UINT32_MAX,
          "batch and heads must be below 2^32 (one grid dimension each)");
  require(shape.heads_q % shape.heads_kv == 0, "heads_q (" + std::to_string(shape.heads_q) +
                                                   ") must be a multiple of heads_kv (" +
                                                   std::to_string(shape.heads_kv) + ")");
  require(kernel.gqa || shape.heads_q == shape.heads_kv,
          "kernel " + kernel.entry + " was generated with gqa=false: heads_q (" + std::to_string(shape.heads_q) +
              ") must equal heads_kv (" + std::to_string(shape.heads_kv) + ")");
  require(call.scale <= 0 || std::isfinite(call.scale), "scale must be finite");
  if (kernel.softcap)
    require(call.softcap > 0 && std::isfinite(call.softcap),
            "kernel " + kernel.entry + " applies a softcap: the call needs a finite softcap > 0");
  else
    require(call.softcap == 0, "kernel " + kernel.entry + " was generated without softcap (spec softcap=false)");
  if (kernel.window)
    require(call.window_left >= -1 && call.window_right >= -1 && call.window_left <= int64_t(kMaxSeq) &&
                call.window_right <= int64_t(kMaxSeq),
            "window sizes must be -1 (unbounded) or between 0 and 2^31-1");
  else
    require(call.window_left == -1 && call.window_right == -1,
            "kernel " + kernel.entry + " was generated without a sliding window (spec window=false)");
  if (kernel.mask == MaskInput::none)
    require(call.mask_strides == std::array<uint64_t, 4>{},
            "kernel " + kernel.entry + " was generated without a mask (spec mask=none)");
  if (!kernel.alibi)
    require(!call.alibi_per_batch, "kernel " + kernel.entry + " was generated without ALiBi (spec alibi=false)");
  if (kernel.backward) require(kernel.lse, "kernel " + kernel.entry + ": backward kernels need the forward's lse");
  if (kernel.paged)
    require(call.page_size >= 1 && call.num_pages >= 1 && call.max_pages >= 1 && call.num_pages <= kMaxSeq &&
                call.max_pages <= kMaxSeq && call.page_size <= kMaxSeq / call.max_pages &&
                shape.seq_k <= call.page_size * call.max_pages &&
                call.strides.k.batch == call.page_size * call.strides.k.row &&
                call.strides.v.batch == call.page_size * call.strides.v.row,
            "kernel " + kernel.entry + " reads a paged cache: page_size, num_pages and max_pages must be at least "
            "1, max_pages x page_size below 2^31 and at least seq_k (the longest cache length, " +
                std::to_string(shape.seq_k) + "), and a page's stride page_size slot strides (pages are contiguous, "
                "as paged_kv() gives them)");
  else
    require(call.page_size == 0 && call.num_pages == 0 && call.max_pages == 0,
            "kernel " + kernel.entry + " was generated for dense k and v (spec kv_cache dense): page_size, "
            "num_pages and max_pages must stay 0");
  require(kv_scales_valid(kernel.kv_format, call.k_scale, call.v_scale),
          kernel.kv_format == KvFormat::fp8_e4m3
              ? "kernel " + kernel.entry + " reads fp8 k and v: k_scale and v_scale must be finite, nonzero float32 "
                "values"
              : "kernel " + kernel.entry + " takes no k_scale or v_scale (only fp8_e4m3 caches do): leave them at 1");
  require(dropout_valid(kernel.dropout, call),
          kernel.dropout ? "kernel " + kernel.entry + " applies dropout: dropout_p must be in [0, 1)"
                         : "kernel " + kernel.entry + " was generated without dropout (spec dropout=false): "
                           "dropout_p, dropout_seed and dropout_offset must stay 0");
  if (kernel.varlen && kernel.paged)
    require(call.total_q >= 1 && call.total_q <= kMaxSeq && call.total_k == 0,
            "kernel " + kernel.entry + " takes packed queries on a paged cache (layout varlen, kv_cache paged): "
            "total_q, the rows of the packed q, must be between 1 and 2^31-1, and total_k 0 (keys come from the "
            "cache)");
  else if (kernel.varlen)
    require(call.total_q >= 1 && call.total_k >= 1 && call.total_q <= kMaxSeq && call.total_k <= kMaxSeq,
            "kernel " + kernel.entry + " takes packed sequences (layout varlen): total_q and total_k, the rows of "
            "the packed tensors, must be between 1 and 2^31-1");
  else
    require(call.total_q == 0 && call.total_k == 0,
            "kernel " + kernel.entry + " was generated for dense tensors (spec layout dense): total_q and total_k "
            "must stay 0");
  require(call.block_classes == BlockClasses::computed || classifies_blocks(kernel),
          "kernel " + kernel.entry + " has no mask_mod: its calls take no block classes (leave block_classes computed)");
  if (call.batch_plan)
    require(kernel.planned_batches && !call.batch_plan->work.empty() && !call.batch_plan->merges.empty() &&
                call.batch_plan->work.size() <= UINT32_MAX && call.batch_plan->merge_count <= call.batch_plan->merges.size(),
            kernel.planned_batches ? "the batch plan has no work item or merge storage: build it with plan_batch"
                                   : "kernel " + kernel.entry + " runs no planned batch (only packed queries on a "
                                     "paged cache do): leave batch_plan null");
  if (call.batch_plan && call.batch_plan->gqa_group != 0)
    require(shape.heads_kv != 0 && shape.heads_q == call.batch_plan->gqa_group * shape.heads_kv, [&] {
      return "the batch plan packs decodes' rows for heads_q / heads_kv = " +
             std::to_string(call.batch_plan->gqa_group) + "; this call has " + std::to_string(shape.heads_q) + " / " +
             std::to_string(shape.heads_kv) + ": plan_batch again for it";
    });
  if (kernel.decode)
    require(shape.seq_q <= kMaxDecodeQueries, "kernel " + kernel.entry + " is a decode kernel: seq_q (" +
                                                  std::to_string(shape.seq_q) + ") must be at most " +
                                                  std::to_string(kMaxDecodeQueries) + "; use a forward kernel");
  else
    require(call.splits == 0, "kernel " + kernel.entry + " is not a decode kernel: it takes no key splits");
}

}  // namespace

uint64_t captured_elements(const CapturedTensor& t, const AttentionShape& s) {
  uint64_t count = 0;
  size_t bad = t.extents.size();
  if (!captured_count(t, s, count, &bad))
    throw DispatchError(bad < t.extents.size()
                            ? "captured tensor " + t.name + ": extent " + std::to_string(bad) +
                                  " is below 1 or past 2^31-1 for this call's shape"
                            : "captured tensor " + t.name + " would hold more than 2^31-1 elements for this call's "
                                                            "shape");
  return count;
}

ForwardStrides packed_varlen(const AttentionShape& s, uint64_t total_q, uint32_t d, uint32_t dv, KvFormat kv) {
  const uint64_t k_row = kv_row_units(kv, d), v_row = kv_row_units(kv, dv);
  ForwardStrides st;
  st.q = {0, d, s.heads_q * d};
  st.k = {0, k_row, s.heads_kv * k_row};
  st.v = {0, v_row, s.heads_kv * v_row};
  st.out = {0, dv, s.heads_q * dv};
  st.lse_batch = 0;
  st.lse_head = total_q;
  return st;
}

namespace {
// k and v of `st` as contiguous caches (num_pages, page_size, Hkv, D): strides {page, head, slot}.
ForwardStrides with_paged_kv(ForwardStrides st, const AttentionShape& s, uint64_t page_size, uint32_t d, uint32_t dv,
                             KvFormat kv) {
  const uint64_t k_row = kv_row_units(kv, d), v_row = kv_row_units(kv, dv);
  st.k = {page_size * s.heads_kv * k_row, k_row, s.heads_kv * k_row};
  st.v = {page_size * s.heads_kv * v_row, v_row, s.heads_kv * v_row};
  return st;
}
}  // namespace

ForwardStrides paged_kv(const AttentionShape& s, uint64_t page_size, uint32_t d, uint32_t dv, KvFormat kv) {
  return with_paged_kv(contiguous_bhsd(s, d, dv), s, page_size, d, dv, kv);
}

ForwardStrides packed_paged(const AttentionShape& s, uint64_t total_q, uint64_t page_size, uint32_t d, uint32_t dv,
                            KvFormat kv) {
  return with_paged_kv(packed_varlen(s, total_q, d, dv, kv), s, page_size, d, dv, kv);
}

void check_paged_cache(const int32_t* block_table, const int32_t* cache_seqlens, uint64_t batch, uint64_t max_pages,
                       uint64_t num_pages, uint64_t page_size, uint64_t longest) {
  for (uint64_t b = 0; b < batch; ++b) {
    const int64_t keys = cache_seqlens[b];
    require(keys >= 0 && uint64_t(keys) <= max_pages * page_size && uint64_t(keys) <= longest, [&] {
      return "cache_seqlens[" + std::to_string(b) + "] = " + std::to_string(keys) + " must be between 0 and " +
             std::to_string(std::min(max_pages * page_size, longest)) + " (max_pages x page_size = " +
             std::to_string(max_pages * page_size) + ", the longest cache length " + std::to_string(longest) + ")";
    });
    for (uint64_t block = 0; block * page_size < uint64_t(keys); ++block) {
      const int64_t page = block_table[b * max_pages + block];
      require(page >= 0 && uint64_t(page) < num_pages, [&] {
        return "block_table[" + std::to_string(b) + "][" + std::to_string(block) + "] = " + std::to_string(page) +
               " is not a page of the cache (0 .. " + std::to_string(num_pages - 1) + ")";
      });
    }
  }
}

void check_cu_seqlens(const int32_t* cu, size_t count, uint64_t batch, uint64_t total, uint64_t longest,
                      std::string_view what) {
  const auto name = [&] { return std::string(what); };
  require(count == batch + 1, [&] {
    return name() + " has " + std::to_string(count) + " entries; a batch of " + std::to_string(batch) +
           " sequences needs " + std::to_string(batch + 1);
  });
  require(cu[0] == 0, [&] { return name() + "[0] is " + std::to_string(cu[0]) + "; the first sequence starts at row 0"; });
  for (size_t b = 0; b < batch; ++b) {
    require(cu[b + 1] >= cu[b], [&] {
      return name() + "[" + std::to_string(b + 1) + "] = " + std::to_string(cu[b + 1]) + " is below " + name() + "[" +
             std::to_string(b) + "] = " + std::to_string(cu[b]) + "; the entries must not decrease";
    });
    require(uint64_t(cu[b + 1] - cu[b]) <= longest, [&] {
      return name() + ": sequence " + std::to_string(b) + " has " + std::to_string(cu[b + 1] - cu[b]) +
             " rows, more than the longest the call declares (" + std::to_string(longest) + ")";
    });
  }
  require(uint64_t(cu[batch]) == total, [&] {
    return name() + "[" + std::to_string(batch) + "] = " + std::to_string(cu[batch]) +
           " must equal the rows of the packed tensors (" + std::to_string(total) + ")";
  });
}

ForwardStrides contiguous_bhsd(const AttentionShape& s, uint32_t d, uint32_t dv, KvFormat kv) {
  const uint64_t k_row = kv_row_units(kv, d), v_row = kv_row_units(kv, dv);
  ForwardStrides st;
  st.q = {s.heads_q * s.seq_q * d, s.seq_q * d, d};
  st.k = {s.heads_kv * s.seq_k * k_row, s.seq_k * k_row, k_row};
  st.v = {s.heads_kv * s.seq_k * v_row, s.seq_k * v_row, v_row};
  st.out = {s.heads_q * s.seq_q * dv, s.seq_q * dv, dv};
  st.lse_batch = s.heads_q * s.seq_q;
  st.lse_head = s.seq_q;
  return st;
}

std::array<uint64_t, 4> broadcast_strides(const std::array<uint64_t, 4>& extents) {
  std::array<uint64_t, 4> strides{};
  uint64_t step = 1;
  for (int d = 3; d >= 0; --d) {
    strides[d] = extents[d] == 1 ? 0 : step;
    step *= extents[d];
  }
  return strides;
}

const BufferRequirement* DispatchPlan::buffer(std::string_view name) const {
  for (const BufferRequirement& b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

DispatchPlan plan_forward(const ForwardKernelInfo& kernel, const ForwardCall& call) {
  check_call(kernel, call);
  const AttentionShape& shape = call.shape;
  const ForwardStrides& strides = call.strides;
  const double scale = call.scale > 0 ? call.scale : 1.0 / std::sqrt(double(kernel.head_dim));

  DispatchPlan plan;
  plan.shape = shape;
  const uint64_t e = kernel.element_bytes;
  // Dense tensors are (B, H, S, D); packed ones one batch of total rows.
  const uint64_t batches = kernel.varlen ? 1 : shape.batch;
  const uint64_t rows_q = kernel.varlen ? call.total_q : shape.seq_q, rows_k = kernel.varlen ? call.total_k : shape.seq_k;
  // A paged cache is num_pages "batches" of page_size rows.
  const uint64_t kv_batches = kernel.paged ? call.num_pages : batches, kv_rows = kernel.paged ? call.page_size : rows_k;
  plan.buffers.push_back({kForwardQ, "q", span_bytes(strides.q, batches, shape.heads_q, rows_q, kernel.head_dim, e, "q"), false});
  // k and v count storage units (elements, quantized blocks or fp8 bytes).
  const uint64_t kv_unit = kv_unit_bytes(kernel.kv_format, kernel.element_bytes);
  const uint64_t k_units = kv_row_units(kernel.kv_format, kernel.head_dim);
  const uint64_t v_units = kv_row_units(kernel.kv_format, kernel.head_dim_v);
  plan.buffers.push_back({kForwardK, "k", span_bytes(strides.k, kv_batches, shape.heads_kv, kv_rows, k_units, kv_unit, "k"), false});
  plan.buffers.push_back({kForwardV, "v", span_bytes(strides.v, kv_batches, shape.heads_kv, kv_rows, v_units, kv_unit, "v"), false});
  const uint64_t out_bytes = span_bytes(strides.out, batches, shape.heads_q, rows_q, kernel.head_dim_v, e, "out");
  // The backward reads the forward's out and lse.
  plan.buffers.push_back({kForwardOut, "out", out_bytes, !kernel.backward});
  if (kernel.lse)
    plan.buffers.push_back({kForwardLse, "lse", span_bytes({strides.lse_batch, strides.lse_head, 1}, batches, shape.heads_q, 1, rows_q, 4, "lse"), !kernel.backward});
  if (kernel.mask != MaskInput::none)
    plan.buffers.push_back({kForwardMask, "mask",
                            span_bytes({shape.batch, shape.heads_q, shape.seq_q, shape.seq_k}, call.mask_strides,
                                       kernel.mask == MaskInput::boolean ? 1 : e, "mask"),
                            false});
  if (kernel.alibi)
    plan.buffers.push_back({kForwardAlibi, "alibi_slopes",
                            checked_mul(call.alibi_per_batch ? shape.batch * shape.heads_q : shape.heads_q, 4, "alibi"),
                            false});
  if (kernel.sinks) plan.buffers.push_back({kForwardSinks, "sinks", checked_mul(shape.heads_q, 4, "sinks"), false});
  if (kernel.mod_scalars) plan.buffers.push_back({kForwardModScalars, "mod_scalars", 4ull * kernel.mod_scalars, false});
  for (size_t i = 0; i < kernel.captures.size(); ++i)
    plan.buffers.push_back({kForwardFirstCapture + uint32_t(i), kernel.captures[i].buffer,
                            4 * captured_elements(kernel.captures[i], shape), false});
  const uint64_t q_blocks = (shape.seq_q + kernel.block_q - 1) / kernel.block_q;
  const uint64_t k_blocks = (shape.seq_k + kernel.block_k - 1) / kernel.block_k;
  if (classifies_blocks(kernel))  // one class per (b, h, query block, key block), written by the _blocks launch
    plan.buffers.push_back({kForwardBlockClasses, "block_classes",
                            checked_mul(checked_mul(mask_tables(kernel, shape), q_blocks, "block_classes"), k_blocks,
                                        "block_classes"),
                            call.block_classes != BlockClasses::given, call.block_classes == BlockClasses::computed});
  if (kernel.paged) {
    plan.buffers.push_back({kForwardBlockTable, "block_table",
                            checked_mul(checked_mul(shape.batch, call.max_pages, "block_table"), 4, "block_table"), false});
    plan.buffers.push_back({kForwardCacheSeqlens, "cache_seqlens", checked_mul(shape.batch, 4, "cache_seqlens"), false});
  }
  if (kernel.varlen) {
    plan.buffers.push_back({kForwardCuSeqlensQ, "cu_seqlens_q", checked_mul(shape.batch + 1, 4, "cu_seqlens"), false});
    if (!kernel.paged)  // a paged cache's lengths are its cache_seqlens
      plan.buffers.push_back({kForwardCuSeqlensK, "cu_seqlens_k", checked_mul(shape.batch + 1, 4, "cu_seqlens"), false});
  }

  // Decode: the rows of a GQA group share threadgroups; keys are split.
  DecodeGrid decode;
  if (kernel.decode) {
    decode = decode_grid(kernel, shape, call.splits);
    require(decode.valid, "splits (" + std::to_string(call.splits) + ") must be at most seq_k");
    const uint32_t splits = decode.splits;
    const uint64_t slots = checked_mul(checked_mul(shape.batch * shape.heads_q, shape.seq_q, "partials"), splits, "partials");
    plan.buffers.push_back({kForwardOutPartial, "out_partial", checked_mul(slots, uint64_t(kernel.head_dim_v) * 4, "partials"), true, true});
    plan.buffers.push_back({kForwardLsePartial, "lse_partial", checked_mul(slots, 4, "partials"), true, true});
  }

  // Planned batches: the work and merge items the caller's plan holds (one
  // unread scratch item each without a plan), the split rows' partials.
  if (kernel.planned_batches) {
    const BatchPlan* b = call.batch_plan;
    const uint64_t slots = b ? std::max<uint64_t>(1, b->partial_slots) : 1;
    plan.buffers.push_back({kForwardOutPartial, "out_partial", checked_mul(slots, uint64_t(kernel.head_dim_v) * 4, "partials"), true, true});
    plan.buffers.push_back({kForwardLsePartial, "lse_partial", checked_mul(slots, 4, "partials"), true, true});
    plan.buffers.push_back({kForwardWorkItems, "work_items", (b ? b->work.size() : 1) * sizeof(BatchWork), false, !b});
    plan.buffers.push_back({kForwardMergeItems, "merge_items", (b ? b->merges.size() : 1) * sizeof(BatchMerge), false, !b});
  }

  uint64_t gradient_elements = 0;  // backward: of the captured tensors' gradients
  if (kernel.backward) {
    // dO has the strides of out, dQ those of q, dK and dV those of k and v.
    plan.buffers.push_back({kBackwardDOut, "d_out", out_bytes, false});
    plan.buffers.push_back({kBackwardDq, "dq", plan.buffer("q")->bytes, true});
    plan.buffers.push_back({kBackwardDk, "dk", plan.buffer("k")->bytes, true});
    plan.buffers.push_back({kBackwardDv, "dv", plan.buffer("v")->bytes, true});
    plan.buffers.push_back({kBackwardDRows, "d_rows",
                            checked_mul(checked_mul(shape.batch * shape.heads_q, shape.seq_q, "d_rows"), 4, "d_rows"),
                            true, true});
    if (kernel.sinks) plan.buffers.push_back({kBackwardDSinks, "d_sinks", plan.buffer("sinks")->bytes, true});
    // Gradients of the float captured tensors score_mod reads, and the dQ threadgroups' partial sums of them.
    uint32_t rank = 0;
    for (const CapturedTensor& t : kernel.captures) {
      if (!t.gradient) continue;
      const uint64_t elements = captured_elements(t, shape);
      plan.buffers.push_back({kBackwardFirstCaptureGrad + rank++, t.gradient_buffer, 4 * elements, true});
      gradient_elements += elements;
    }
    if (gradient_elements)
      plan.buffers.push_back({kBackwardCaptureGradPartials, "capture_grad_partials",
                              checked_mul(checked_mul(shape.batch * shape.heads_q, q_blocks, "capture_grad_partials"),
                                          4 * gradient_elements, "capture_grad_partials"),
                              true, true});
  }

  // The fields of the kernel's AttentionParams, in its order: 8-byte fields
  // first, then the 4-byte ones, then those of the kernel's features.
  ParamsWriter w;
  write_params(w, kernel, call, scale, decode.splits, decode.split_keys, decode.row_blocks);
  plan.params = w.finish(8);
  plan.buffers.push_back({kForwardParams, "params", plan.params.size(), false});

  // The launches and the buffers each binds.
  // The score_mod / mask_mod inputs join the launches that compute scores.
  auto bound = [&](std::initializer_list<uint32_t> wanted, bool scores = false) {
    std::vector<uint32_t> used;
    for (uint32_t index : wanted)
      for (const BufferRequirement& b : plan.buffers)
        if (b.index == index) used.push_back(index);
    if (scores)
      for (const BufferRequirement& b : plan.buffers)
        if (b.index < 32 && (kModInputsMask >> b.index & 1u)) used.push_back(b.index);
    return used;
  };
  auto launch = [&](std::string entry, std::array<uint64_t, 3> grid, uint32_t threads, uint32_t tg_bytes,
                    std::vector<uint32_t> buffers) {
    KernelLaunch l;
    l.entry = std::move(entry);
    l.threadgroups = {uint32_t(grid[0]), uint32_t(grid[1]), uint32_t(grid[2])};
    l.threads_per_threadgroup = {threads, 1, 1};
    l.threadgroup_bytes = tg_bytes;
    l.buffers = std::move(buffers);
    std::sort(l.buffers.begin(), l.buffers.end());  // bound in ascending order, as LaunchPlan keeps them
    plan.launches.push_back(std::move(l));
  };
  if (classifies_blocks(kernel) && call.block_classes != BlockClasses::given)
    launch(kernel.entry + "_blocks", {k_blocks, q_blocks, mask_tables(kernel, shape)}, 32, 0,
           bound({kForwardParams}, true));
  if (call.block_classes == BlockClasses::only) {  // the classes alone: only what _blocks binds is needed
    const std::vector<uint32_t> used = plan.launches.back().buffers;
    std::erase_if(plan.buffers, [&](const BufferRequirement& b) {
      return std::find(used.begin(), used.end(), b.index) == used.end() && b.index != kForwardBlockClasses;
    });
    return plan;
  }
  if (kernel.backward) {
    launch(kernel.entry + "_preprocess", {shape.seq_q, shape.heads_q, shape.batch}, 32, 0,
           bound({kForwardOut, kForwardParams, kBackwardDOut, kBackwardDRows, kForwardCuSeqlensQ}));
    launch(kernel.entry + "_dkdv", {k_blocks, shape.heads_kv, shape.batch}, kernel.threads, kernel.threadgroup_bytes,
           bound({kForwardQ, kForwardK, kForwardV, kForwardLse, kForwardParams, kForwardMask, kForwardAlibi,
                  kBackwardDOut, kBackwardDk, kBackwardDv, kBackwardDRows, kForwardCuSeqlensQ, kForwardCuSeqlensK},
                 true));
    std::vector<uint32_t> dq_buffers =
        bound({kForwardQ, kForwardK, kForwardV, kForwardLse, kForwardParams, kForwardMask, kForwardAlibi,
               kBackwardDOut, kBackwardDq, kBackwardDRows, kForwardCuSeqlensQ, kForwardCuSeqlensK},
              true);
    if (gradient_elements) dq_buffers.push_back(kBackwardCaptureGradPartials);
    launch(kernel.entry + "_dq", {q_blocks, shape.heads_q, shape.batch}, kernel.threads, kernel.threadgroup_bytes,
           std::move(dq_buffers));
    if (kernel.sinks)
      launch(kernel.entry + "_dsinks", {shape.heads_q, 1, 1}, 32, 0,
             bound({kForwardLse, kForwardParams, kBackwardDRows, kForwardSinks, kBackwardDSinks, kForwardCuSeqlensQ}));
    if (gradient_elements) {
      std::vector<uint32_t> buffers = bound({kForwardParams});
      for (const BufferRequirement& b : plan.buffers)
        if (b.index >= kForwardModScalars && b.index <= kBackwardCaptureGradPartials) buffers.push_back(b.index);
      launch(kernel.entry + "_dcaptures", {(gradient_elements + 31) / 32, 1, 1}, 32, 0, std::move(buffers));
    }
  } else if (kernel.decode) {
    launch(kernel.entry, {decode.splits, uint64_t(shape.heads_kv) * decode.row_blocks, shape.batch},
           decode.threads(), kernel.threadgroup_bytes,
           bound({kForwardQ, kForwardK, kForwardV, kForwardParams, kForwardMask, kForwardAlibi, kForwardOutPartial,
                  kForwardLsePartial, kForwardBlockTable, kForwardCacheSeqlens},
                 true));
    launch(kernel.combine_entry, {shape.seq_q, shape.heads_q, shape.batch}, 32, 0,
           bound({kForwardOut, kForwardLse, kForwardParams, kForwardOutPartial, kForwardLsePartial, kForwardSinks}));
  } else if (kernel.planned_batches) {
    // With a plan: a threadgroup per work item and q head, then the merge of
    // the split blocks' rows; without one, the grid, and a merge with nothing to do.
    const BatchPlan* b = call.batch_plan;
    launch(kernel.entry, b ? std::array<uint64_t, 3>{b->work.size(), shape.heads_q, 1}
                           : std::array<uint64_t, 3>{q_blocks, shape.heads_q, shape.batch},
           kernel.threads, kernel.threadgroup_bytes,
           bound({kForwardQ, kForwardK, kForwardV, kForwardOut, kForwardLse, kForwardParams, kForwardAlibi,
                  kForwardSinks, kForwardCuSeqlensQ, kForwardBlockTable, kForwardCacheSeqlens, kForwardOutPartial,
                  kForwardLsePartial, kForwardWorkItems}));
    launch(kernel.entry + "_merge", {b ? std::max<uint64_t>(1, b->merge_count) : 1, kernel.block_q, shape.heads_q}, 32,
           0,
           bound({kForwardOut, kForwardLse, kForwardParams, kForwardSinks, kForwardCuSeqlensQ, kForwardOutPartial,
                  kForwardLsePartial, kForwardMergeItems}));
  } else {
    launch(kernel.entry, {q_blocks, shape.heads_q, shape.batch}, kernel.threads, kernel.threadgroup_bytes,
           bound({kForwardQ, kForwardK, kForwardV, kForwardOut, kForwardLse, kForwardParams, kForwardMask,
                  kForwardAlibi, kForwardSinks, kForwardCuSeqlensQ, kForwardCuSeqlensK, kForwardBlockTable,
                  kForwardCacheSeqlens},
                 true));
  }
  return plan;
}

}  // namespace mfagen
