// Library::launch_plan: plan_forward() (runtime/dispatch) without the heap,
// for the per-call hot path. It computes the same launches, buffer sizes and
// params bytes into fixed storage; tests/runtime/launch_plan_test.cpp asserts
// equality with plan_forward() for every kernel kind and feature over many
// shapes, so the two cannot drift apart silently. Calls the kernel cannot run
// are handed to plan_forward(), which throws the DispatchError that names the
// problem (allocation on the error path only).
#include <cmath>
#include <cstring>
#include <limits>

#include "mfagen/library.h"

namespace mfagen {
namespace {

constexpr uint64_t kMaxPlannedSeq = std::numeric_limits<int32_t>::max();  // as plan_forward: kernels index rows with int

// Overflow-checked arithmetic: `ok` turns false instead of wrapping.
struct Checked {
  bool ok = true;
  uint64_t mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    ok &= !__builtin_mul_overflow(a, b, &r);
    return r;
  }
  // Bytes from the first element to one past the last element a view
  // touches. Validated calls have extents below 2^32, so every product is
  // below 2^96 and the sum fits 128 bits: one check at the end.
  uint64_t span(const std::array<uint64_t, 4>& extents, const std::array<uint64_t, 4>& strides, uint64_t elem) {
    unsigned __int128 last = 0;
    for (int d = 0; d < 4; ++d) last += (unsigned __int128)(extents[d] - 1) * strides[d];
    const unsigned __int128 bytes = (last + 1) * elem;
    ok &= bytes >> 64 == 0;
    return uint64_t(bytes);
  }
  uint64_t span(const Strides3& s, uint64_t batch, uint64_t heads, uint64_t rows, uint64_t cols, uint64_t elem) {
    return span({batch, heads, rows, cols}, {s.batch, s.head, s.row, 1}, elem);
  }
};

// check_call() of forward_dispatch.cpp, as one boolean.
bool call_is_valid(const ForwardKernelInfo& kernel, const ForwardCall& call) {
  const AttentionShape& s = call.shape;
  bool ok = s.batch >= 1 && s.heads_q >= 1 && s.heads_kv >= 1 && s.seq_q >= 1 && s.seq_k >= 1;
  ok = ok && s.seq_q <= kMaxPlannedSeq && s.seq_k <= kMaxPlannedSeq;
  ok = ok && s.batch <= UINT32_MAX && s.heads_q <= UINT32_MAX && s.heads_kv <= UINT32_MAX;
  ok = ok && uint32_t(s.heads_q) % uint32_t(s.heads_kv) == 0 && (kernel.gqa || s.heads_q == s.heads_kv);
  ok = ok && (call.scale <= 0 || std::isfinite(call.scale));
  ok = ok && (kernel.softcap ? call.softcap > 0 && std::isfinite(call.softcap) : call.softcap == 0);
  ok = ok && (kernel.window ? call.window_left >= -1 && call.window_right >= -1 &&
                                  call.window_left <= int64_t(kMaxPlannedSeq) && call.window_right <= int64_t(kMaxPlannedSeq)
                            : call.window_left == -1 && call.window_right == -1);
  const std::array<uint64_t, 4>& m = call.mask_strides;
  ok = ok && (kernel.mask != MaskInput::none || (m[0] | m[1] | m[2] | m[3]) == 0);
  ok = ok && (kernel.alibi || !call.alibi_per_batch);
  ok = ok && (!kernel.backward || kernel.lse);
  ok = ok && (kernel.paged ? call.page_size >= 1 && call.num_pages >= 1 && call.max_pages >= 1 &&
                                 call.num_pages <= kMaxPlannedSeq && call.max_pages <= kMaxPlannedSeq &&
                                 call.page_size <= kMaxPlannedSeq / call.max_pages && s.seq_k <= call.page_size * call.max_pages &&
                                 call.strides.k.batch == call.page_size * call.strides.k.row &&
                                 call.strides.v.batch == call.page_size * call.strides.v.row
                           : call.page_size == 0 && call.num_pages == 0 && call.max_pages == 0);
  ok = ok && (kernel.varlen ? call.total_q >= 1 && call.total_q <= kMaxPlannedSeq &&
                                  (kernel.paged ? call.total_k == 0 : call.total_k >= 1 && call.total_k <= kMaxPlannedSeq)
                            : call.total_q == 0 && call.total_k == 0);
  ok = ok && kv_scales_valid(kernel.kv_format, call.k_scale, call.v_scale);
  ok = ok && dropout_valid(kernel.dropout, call);
  ok = ok && (kernel.decode ? s.seq_q <= kMaxDecodeQueries : call.splits == 0);
  ok = ok && (call.block_classes == BlockClasses::computed || classifies_blocks(kernel));
  const BatchPlan* b = call.batch_plan;
  ok = ok && (!b || (kernel.planned_batches && !b->work.empty() && !b->merges.empty() && b->work.size() <= UINT32_MAX &&
                     b->merge_count <= b->merges.size()));
  ok = ok && (!b || b->gqa_group == 0 || (s.heads_kv != 0 && s.heads_q == b->gqa_group * s.heads_kv));
  return ok;
}

// ParamsWriter (runtime/dispatch/params_writer.h) over fixed storage.
struct FixedParams {
  std::byte* bytes;
  uint32_t size = 0;
  template <class T>
  FixedParams& put(T value) {
    size = (size + uint32_t(sizeof(T)) - 1) / uint32_t(sizeof(T)) * uint32_t(sizeof(T));
    std::memcpy(bytes + size, &value, sizeof(T));
    size += uint32_t(sizeof(T));
    return *this;
  }
  void finish(uint32_t alignment) {
    while (size % alignment) bytes[size++] = std::byte{0};  // at most 4 bytes: fields are 4 or 8 bytes
  }
};

[[noreturn]] void reject(const KernelEntry& kernel, const ForwardCall& call) {
  plan_forward(kernel.info, call);  // throws the DispatchError naming the problem
  throw DispatchError("kernel " + kernel.name + ": the call cannot be planned (launch_plan and plan_forward disagree)");
}

}  // namespace

const LaunchPlan::Buffer* LaunchPlan::buffer(uint32_t index) const {
  for (const Buffer& b : buffers())
    if (b.index == index) return &b;
  return nullptr;
}

const LaunchPlan::Buffer* LaunchPlan::buffer(std::string_view name) const {
  for (const Buffer& b : buffers())
    if (b.name == name) return &b;
  return nullptr;
}

DispatchPlan LaunchPlan::to_dispatch_plan() const {
  DispatchPlan plan;
  for (const Launch& l : launches()) {
    KernelLaunch k;
    k.entry = std::string(l.entry);
    k.threadgroups = l.threadgroups;
    k.threads_per_threadgroup = l.threads_per_threadgroup;
    k.threadgroup_bytes = l.threadgroup_bytes;
    for (uint32_t i = 0; i < 32; ++i)
      if (l.binds(i)) k.buffers.push_back(i);
    plan.launches.push_back(std::move(k));
  }
  for (const Buffer& b : buffers()) plan.buffers.push_back({b.index, std::string(b.name), b.bytes, b.written, b.scratch});
  plan.params.assign(params().begin(), params().end());
  plan.shape = shape;
  return plan;
}

LaunchPlan Library::launch_plan(const KernelEntry& kernel, const ForwardCall& call) {
  LaunchPlan plan;
  launch_plan(kernel, call, plan);
  return plan;
}

LaunchPlan& Library::launch_plan(const KernelEntry& kernel, const ForwardCall& call, LaunchPlan& plan) {
  const ForwardKernelInfo& info = kernel.info;
  if (kernel.kind == KernelKind::cache_append)
    throw DispatchError("kernel " + kernel.name + " writes the KV cache (kind cache_append), it is not attention: plan "
                        "it with plan_cache_append (mfagen/cache_append_dispatch.h)");
  // mask_mod kernels launch their _blocks entry first.
  const size_t first = classifies_blocks(info) ? 1 : 0;
  const bool gradients = writes_capture_gradients(info);
  if (kernel.entries.size() !=
      first + (info.backward ? 3u + info.sinks + gradients : info.decode || info.planned_batches ? 2u : 1u))
    throw DispatchError("kernel " + kernel.name + " lists " + std::to_string(kernel.entries.size()) +
                        " entry points; launch_plan needs a KernelEntry of a loaded Library");
  if (!call_is_valid(info, call)) reject(kernel, call);
  const AttentionShape& s = call.shape;
  const ForwardStrides& st = call.strides;
  const uint64_t e = info.element_bytes;
  Checked c;
  plan.launch_count = plan.buffer_count = 0;
  plan.constants = kernel.function_constants;
  plan.shape = s;
  uint32_t present = 0;  // bit per buffer index in the plan
  auto add = [&](uint32_t index, std::string_view name, uint64_t bytes, bool written, bool scratch = false) {
    plan.buffer_storage[plan.buffer_count++] = {name, bytes, index, written, scratch};
    present |= 1u << index;
    return bytes;
  };

  // Dense tensors are (B, H, S, D); packed ones one batch of total rows.
  const uint64_t batches = info.varlen ? 1 : s.batch;
  const uint64_t rows_q = info.varlen ? call.total_q : s.seq_q, rows_k = info.varlen ? call.total_k : s.seq_k;
  // A paged cache is num_pages "batches" of page_size rows.
  const uint64_t kv_batches = info.paged ? call.num_pages : batches, kv_rows = info.paged ? call.page_size : rows_k;
  const uint64_t q_bytes = add(kForwardQ, "q", c.span(st.q, batches, s.heads_q, rows_q, info.head_dim, e), false);
  // k and v count storage units (elements, quantized blocks or fp8 bytes).
  const uint64_t kv_unit = kv_unit_bytes(info.kv_format, info.element_bytes);
  const uint64_t k_units = kv_row_units(info.kv_format, info.head_dim), v_units = kv_row_units(info.kv_format, info.head_dim_v);
  const uint64_t k_bytes = add(kForwardK, "k", c.span(st.k, kv_batches, s.heads_kv, kv_rows, k_units, kv_unit), false);
  const uint64_t v_bytes = add(kForwardV, "v", c.span(st.v, kv_batches, s.heads_kv, kv_rows, v_units, kv_unit), false);
  const uint64_t out_bytes =
      add(kForwardOut, "out", c.span(st.out, batches, s.heads_q, rows_q, info.head_dim_v, e), !info.backward);
  if (info.lse)
    add(kForwardLse, "lse", c.span({st.lse_batch, st.lse_head, 1}, batches, s.heads_q, 1, rows_q, 4), !info.backward);
  if (info.mask != MaskInput::none)
    add(kForwardMask, "mask",
        c.span({s.batch, s.heads_q, s.seq_q, s.seq_k}, call.mask_strides, info.mask == MaskInput::boolean ? 1 : e),
        false);
  if (info.alibi) add(kForwardAlibi, "alibi_slopes", c.mul(call.alibi_per_batch ? s.batch * s.heads_q : s.heads_q, 4), false);
  const uint64_t sinks_bytes = info.sinks ? add(kForwardSinks, "sinks", c.mul(s.heads_q, 4), false) : 0;
  if (info.mod_scalars) add(kForwardModScalars, "mod_scalars", 4ull * info.mod_scalars, false);
  for (size_t i = 0; i < info.captures.size(); ++i) {
    uint64_t count = 0;
    if (!captured_count(info.captures[i], s, count)) reject(kernel, call);
    add(kForwardFirstCapture + uint32_t(i), info.captures[i].buffer, 4 * count, false);
  }
  const uint64_t q_blocks = ceil_div(s.seq_q, info.block_q), k_blocks = ceil_div(s.seq_k, info.block_k);
  if (classifies_blocks(info))
    add(kForwardBlockClasses, "block_classes", c.mul(c.mul(mask_tables(info, s), q_blocks), k_blocks),
        call.block_classes != BlockClasses::given, call.block_classes == BlockClasses::computed);
  if (info.paged) {
    add(kForwardBlockTable, "block_table", c.mul(c.mul(s.batch, call.max_pages), 4), false);
    add(kForwardCacheSeqlens, "cache_seqlens", c.mul(s.batch, 4), false);
  }
  if (info.varlen) {
    add(kForwardCuSeqlensQ, "cu_seqlens_q", c.mul(s.batch + 1, 4), false);
    if (!info.paged) add(kForwardCuSeqlensK, "cu_seqlens_k", c.mul(s.batch + 1, 4), false);
  }
  const BatchPlan* batch_plan = call.batch_plan;
  if (info.planned_batches) {  // plan_forward's planned-batch buffers
    const uint64_t slots = batch_plan ? std::max<uint64_t>(1, batch_plan->partial_slots) : 1;
    add(kForwardOutPartial, "out_partial", c.mul(slots, uint64_t(info.head_dim_v) * 4), true, true);
    add(kForwardLsePartial, "lse_partial", c.mul(slots, 4), true, true);
    add(kForwardWorkItems, "work_items", (batch_plan ? batch_plan->work.size() : 1) * sizeof(BatchWork), false,
        !batch_plan);
    add(kForwardMergeItems, "merge_items", (batch_plan ? batch_plan->merges.size() : 1) * sizeof(BatchMerge), false,
        !batch_plan);
  }

  DecodeGrid decode;
  if (info.decode) {
    decode = decode_grid(info, s, call.splits);
    if (!decode.valid) reject(kernel, call);
    const uint32_t splits = decode.splits;
    const uint64_t slots = c.mul(c.mul(s.batch * s.heads_q, s.seq_q), splits);
    add(kForwardOutPartial, "out_partial", c.mul(slots, uint64_t(info.head_dim_v) * 4), true, true);
    add(kForwardLsePartial, "lse_partial", c.mul(slots, 4), true, true);
  }
  uint64_t gradient_elements = 0;  // backward: of the captured tensors' gradients
  if (info.backward) {
    add(kBackwardDOut, "d_out", out_bytes, false);
    add(kBackwardDq, "dq", q_bytes, true);
    add(kBackwardDk, "dk", k_bytes, true);
    add(kBackwardDv, "dv", v_bytes, true);
    add(kBackwardDRows, "d_rows", c.mul(c.mul(s.batch * s.heads_q, s.seq_q), 4), true, true);
    if (info.sinks) add(kBackwardDSinks, "d_sinks", sinks_bytes, true);
    uint32_t rank = 0;
    for (const CapturedTensor& t : info.captures) {
      if (!t.gradient) continue;
      uint64_t elements = 0;
      if (!captured_count(t, s, elements)) reject(kernel, call);
      add(kBackwardFirstCaptureGrad + rank++, t.gradient_buffer, 4 * elements, true);
      gradient_elements += elements;
    }
    if (gradient_elements)
      add(kBackwardCaptureGradPartials, "capture_grad_partials",
          c.mul(c.mul(s.batch * s.heads_q, q_blocks), 4 * gradient_elements), true, true);
  }
  if (!c.ok) reject(kernel, call);  // a size that does not fit 64 bits

  const double scale = call.scale > 0 ? call.scale : 1.0 / std::sqrt(double(info.head_dim));
  FixedParams w{plan.params_storage.data()};
  write_params(w, info, call, scale, decode.splits, decode.split_keys, decode.row_blocks);
  w.finish(8);
  plan.params_size = w.size;
  add(kForwardParams, "params", w.size, false);

  // Launches: the manifest's entries in launch order (checked at load).
  auto launch = [&](size_t entry, uint64_t x, uint64_t y, uint64_t z, uint32_t threads, uint32_t tg_bytes,
                    uint32_t wanted) {
    LaunchPlan::Launch& l = plan.launch_storage[plan.launch_count++];
    l.entry = kernel.entries[first + entry];
    l.threadgroups = {uint32_t(x), uint32_t(y), uint32_t(z)};
    l.threads_per_threadgroup = {threads, 1, 1};
    l.threadgroup_bytes = tg_bytes;
    l.buffer_mask = wanted & present;
  };
  // The score_mod / mask_mod inputs (indices 21 and up) join the launches that compute scores.
  const uint32_t mod_inputs = present & kModInputsMask;
  auto bits = [](std::initializer_list<uint32_t> indices) {
    uint32_t m = 0;
    for (uint32_t i : indices) m |= 1u << i;
    return m;
  };
  if (classifies_blocks(info) && call.block_classes != BlockClasses::given) {
    LaunchPlan::Launch& l = plan.launch_storage[plan.launch_count++];
    l.entry = kernel.entries[0];
    l.threadgroups = {uint32_t(k_blocks), uint32_t(q_blocks), uint32_t(mask_tables(info, s))};
    l.threads_per_threadgroup = {32, 1, 1};
    l.threadgroup_bytes = 0;
    l.buffer_mask = (bits({kForwardParams}) & present) | mod_inputs;
  }
  if (call.block_classes == BlockClasses::only) {  // the classes alone: keep what _blocks binds (plan_forward's order)
    const uint32_t used = plan.launch_storage[0].buffer_mask;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < plan.buffer_count; ++i)
      if (used >> plan.buffer_storage[i].index & 1u) plan.buffer_storage[kept++] = plan.buffer_storage[i];
    plan.buffer_count = kept;
    return plan;
  }
  if (info.backward) {
    launch(0, s.seq_q, s.heads_q, s.batch, 32, 0,
           bits({kForwardOut, kForwardParams, kBackwardDOut, kBackwardDRows, kForwardCuSeqlensQ}));
    launch(1, k_blocks, s.heads_kv, s.batch, info.threads, info.threadgroup_bytes,
           bits({kForwardQ, kForwardK, kForwardV, kForwardLse, kForwardParams, kForwardMask, kForwardAlibi,
                 kBackwardDOut, kBackwardDk, kBackwardDv, kBackwardDRows, kForwardCuSeqlensQ, kForwardCuSeqlensK}) |
               mod_inputs);
    launch(2, q_blocks, s.heads_q, s.batch, info.threads, info.threadgroup_bytes,
           bits({kForwardQ, kForwardK, kForwardV, kForwardLse, kForwardParams, kForwardMask, kForwardAlibi,
                 kBackwardDOut, kBackwardDq, kBackwardDRows, kForwardCuSeqlensQ, kForwardCuSeqlensK}) |
               mod_inputs | (present & bits({kBackwardCaptureGradPartials})));
    if (info.sinks)
      launch(3, s.heads_q, 1, 1, 32, 0,
             bits({kForwardLse, kForwardParams, kBackwardDRows, kForwardSinks, kBackwardDSinks, kForwardCuSeqlensQ}));
    if (gradient_elements)
      launch(3 + info.sinks, ceil_div(gradient_elements, 32), 1, 1, 32, 0,
             bits({kForwardParams}) | (present & ((1u << (kBackwardCaptureGradPartials + 1)) - (1u << kForwardModScalars))));
  } else if (info.decode) {
    launch(0, decode.splits, uint64_t(s.heads_kv) * decode.row_blocks, s.batch, decode.threads(),
           info.threadgroup_bytes,
           bits({kForwardQ, kForwardK, kForwardV, kForwardParams, kForwardMask, kForwardAlibi, kForwardOutPartial,
                 kForwardLsePartial, kForwardBlockTable, kForwardCacheSeqlens}) |
               mod_inputs);
    launch(1, s.seq_q, s.heads_q, s.batch, 32, 0,
           bits({kForwardOut, kForwardLse, kForwardParams, kForwardOutPartial, kForwardLsePartial, kForwardSinks}));
  } else if (info.planned_batches) {
    const uint32_t work_buffers =
        bits({kForwardQ, kForwardK, kForwardV, kForwardOut, kForwardLse, kForwardParams, kForwardAlibi, kForwardSinks,
              kForwardCuSeqlensQ, kForwardBlockTable, kForwardCacheSeqlens, kForwardOutPartial, kForwardLsePartial,
              kForwardWorkItems});
    if (batch_plan)
      launch(0, batch_plan->work.size(), s.heads_q, 1, info.threads, info.threadgroup_bytes, work_buffers);
    else
      launch(0, q_blocks, s.heads_q, s.batch, info.threads, info.threadgroup_bytes, work_buffers);
    launch(1, batch_plan ? std::max<uint64_t>(1, batch_plan->merge_count) : 1, info.block_q, s.heads_q, 32, 0,
           bits({kForwardOut, kForwardLse, kForwardParams, kForwardSinks, kForwardCuSeqlensQ, kForwardOutPartial,
                 kForwardLsePartial, kForwardMergeItems}));
  } else {
    launch(0, q_blocks, s.heads_q, s.batch, info.threads, info.threadgroup_bytes,
           bits({kForwardQ, kForwardK, kForwardV, kForwardOut, kForwardLse, kForwardParams, kForwardMask,
                 kForwardAlibi, kForwardSinks, kForwardCuSeqlensQ, kForwardCuSeqlensK, kForwardBlockTable,
                 kForwardCacheSeqlens}) |
               mod_inputs);
  }
  return plan;
}

}  // namespace mfagen
