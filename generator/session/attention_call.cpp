#include "session/attention_call.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>
#include <span>
#include <stdexcept>

#include "io/npy.h"
#include "plan/kernel_plan.h"
#include "session/call_error.h"
#include "session/kernel_buffers.h"
#include "session/kernel_selection.h"

namespace mfagen::session {
namespace {

void check_options(const AttentionOptions& o) {
  if (o.scale && !(std::isfinite(*o.scale) && *o.scale > 0))
    throw CallError(fmt::format("scale {}: expected a finite number > 0", *o.scale));
  if (o.dropout && !(*o.dropout >= 0 && *o.dropout < 1))
    throw CallError(fmt::format("dropout {}: expected a probability in [0, 1)", *o.dropout));
  if (!o.dropout && (o.seed != 0 || o.offset != 0))
    throw CallError("the dropout seed and offset key the dropout mask: they need a dropout probability");
}

CallRequest request_for(const CallLayout& geometry, const AttentionInputs& in, const AttentionOptions& o,
                        KvFormat kv_format) {
  CallRequest r = request_with_shape(geometry);
  r.varlen = packed_queries(in.layout);
  r.paged = paged_keys(in.layout);
  r.kv_format = kv_format;
  r.dropout = o.dropout.has_value();
  r.has_mask = in.mask.has_value();
  r.alibi = in.alibi_slopes.has_value();
  r.softcap = o.softcap.has_value();
  r.window = o.window_left.has_value() || o.window_right.has_value();
  r.sinks = in.sinks.has_value();
  r.backward = in.d_out.has_value();
  r.mods = bool(in.score_functions);
  r.dtype = o.dtype;
  r.causal = o.causal;
  return r;
}

std::vector<uint64_t> capture_shape(const plan::KernelPlan& plan, const std::string& name, const AttentionShape& s) {
  const std::array<int64_t, 5> sizes{int64_t(s.batch), int64_t(s.heads_q), int64_t(s.heads_kv), int64_t(s.seq_q),
                                     int64_t(s.seq_k)};
  std::vector<uint64_t> extents;
  for (const expr::CaptureDecl& c : plan.spec.mods.captures)
    if (c.name == name)
      for (const expr::LinearForm& e : c.extents) extents.push_back(uint64_t(e.at(sizes)));
  return extents;
}

// Checks the inputs' layouts and shapes, derives the call's geometry and
// selects its kernel; nothing runs.
struct SelectedCall {
  CallLayout geometry;
  const KernelEntry* entry = nullptr;
  const plan::KernelPlan* plan = nullptr;
};

SelectedCall select_call(const KernelSet& kernels, const AttentionInputs& in, const AttentionOptions& options,
                         const Backend& backend) {
  const bool packed = packed_queries(in.layout), paged = paged_keys(in.layout);
  if (packed != in.sequences.has_value())
    throw CallError(packed ? "packed q, k and v need cu_seqlens_q and cu_seqlens_k"
                           : "cu_seqlens_q and cu_seqlens_k are for packed q, k and v");
  if (packed && paged != in.sequences->cu_seqlens_k.empty())
    throw CallError(paged ? "packed queries on a paged cache take cu_seqlens_q only: each sequence's keys are its "
                            "cache_seqlens"
                          : "packed q, k and v need cu_seqlens_k too");
  if (paged != in.cache.has_value())
    throw CallError(paged ? "a paged cache needs block_table and cache_seqlens"
                          : "block_table and cache_seqlens are for a paged cache");
  const bool quantized = in.k_cache.has_value();
  if (quantized != in.v_cache.has_value() || quantized == (in.kv_format == KvFormat::elements))
    throw std::logic_error("run_attention: k_cache and v_cache come together, with their kv_format");
  for (const HostTensor* t : {&in.q, &in.k, &in.v}) {
    if (quantized && t != &in.q) continue;  // quantized rows are checked by their reader
    t->check_layout();
    require_floating(*t);
    require_nonempty(*t);
  }
  const TensorShape q_shape{in.q.name, in.q.shape};
  const TensorShape k_shape = quantized ? in.k_cache->shape : TensorShape{in.k.name, in.k.shape};
  const TensorShape v_shape = quantized ? in.v_cache->shape : TensorShape{in.v.name, in.v.shape};
  check_ranks(in.layout, q_shape, k_shape, v_shape);
  SequenceSizes sizes;
  if (packed) sizes = {in.sequences->batch, in.sequences->longest_q, in.sequences->longest_k, 0};
  if (paged) sizes = {packed ? in.sequences->batch : in.q.shape[0], sizes.longest_q, in.cache->longest,
                      in.cache->max_pages};
  if (packed && paged && in.cache->cache_seqlens.size() != sizes.batch)
    throw CallError(fmt::format("cache_seqlens has {} lengths and cu_seqlens_q {} sequences: one cache per sequence",
                                in.cache->cache_seqlens.size(), sizes.batch));
  SelectedCall c{call_layout(in.layout, q_shape, k_shape, v_shape, sizes, in.kv_format)};
  c.entry = &select_kernel(kernels.set.library, request_for(c.geometry, in, options, in.kv_format), kernels.name,
                           backend.capabilities());
  c.plan = &kernels.set.plan_of(*c.entry);
  if (in.kv_format != KvFormat::fp8_e4m3 && (options.k_scale || options.v_scale))
    throw CallError("k_scale and v_scale scale fp8_e4m3 caches; this call's k and v are not fp8");
  if (in.out.has_value() != in.lse.has_value() || (in.out && c.plan->spec.kind != spec::Kind::backward))
    throw CallError("out and lse of an earlier forward go together, with dO, to a backward kernel");
  return c;
}

// The call's runtime values (DESIGN.md section 3) beyond the tensors.
ForwardCall runtime_values(const CallLayout& geometry, const AttentionOptions& options, KvFormat kv_format) {
  ForwardCall call;
  geometry.apply_to(call);
  call.scale = options.scale.value_or(0);
  call.softcap = options.softcap.value_or(0);
  call.window_left = options.window_left.value_or(-1);
  call.window_right = options.window_right.value_or(-1);
  if (kv_format == KvFormat::fp8_e4m3) {
    call.k_scale = options.k_scale.value_or(1);
    call.v_scale = options.v_scale.value_or(1);
  }
  if (options.dropout) {
    call.dropout_p = *options.dropout;
    call.dropout_seed = options.seed;
    call.dropout_offset = options.offset;
  }
  return call;
}

// Every buffer the forward kernel reads, prepared and bound by index; q, k
// and v are read in place where their layout allows (dense and packed
// strides; paged caches are read contiguous), and `call` gets their strides.
struct ForwardInputs {
  KernelBuffer q, k, v;
  std::optional<MaskBuffer> mask;
  std::optional<SlopeBuffer> slopes;
  std::vector<float> sinks;
  ScoreFunctionInputs mods;
  std::vector<int32_t> block_table, cache_seqlens, cu_q, cu_k;  // copies: the backend binds mutable spans
  BatchPlan batch_plan;  // packed queries on a paged cache: the step's work split (Library::plan_batch)

  void bind(TensorMap& tensors) {
    tensors[plan::kQIndex] = q.bytes;
    tensors[plan::kKIndex] = k.bytes;
    tensors[plan::kVIndex] = v.bytes;
    if (mask) tensors[plan::kMaskIndex] = mask->buffer.bytes;
    if (slopes) tensors[plan::kAlibiIndex] = std::as_writable_bytes(std::span(slopes->slopes));
    if (!sinks.empty()) tensors[plan::kSinksIndex] = std::as_writable_bytes(std::span(sinks));
    if (!mods.scalars.empty()) tensors[kForwardModScalars] = std::as_writable_bytes(std::span(mods.scalars));
    for (size_t i = 0; i < mods.captures.size(); ++i) tensors[kForwardFirstCapture + uint32_t(i)] = mods.captures[i];
    if (!block_table.empty()) {
      tensors[plan::kBlockTableIndex] = std::as_writable_bytes(std::span(block_table));
      tensors[plan::kCacheSeqlensIndex] = std::as_writable_bytes(std::span(cache_seqlens));
    }
    if (!cu_q.empty()) tensors[plan::kCuSeqlensQIndex] = std::as_writable_bytes(std::span(cu_q));
    if (!batch_plan.work.empty()) {
      tensors[plan::kWorkItemsIndex] = std::as_writable_bytes(std::span(batch_plan.work));
      tensors[plan::kMergeItemsIndex] = std::as_writable_bytes(std::span(batch_plan.merges));
    }
    if (!cu_k.empty()) tensors[plan::kCuSeqlensKIndex] = std::as_writable_bytes(std::span(cu_k));
  }
};

ForwardInputs forward_inputs(const AttentionInputs& in, const plan::KernelPlan& plan, const AttentionShape& shape,
                             ForwardCall& call) {
  const spec::DType dtype = plan.spec.dtype;
  const bool packed = packed_queries(in.layout), paged = paged_keys(in.layout);
  ForwardInputs f;
  f.q = kernel_buffer(in.q, dtype, packed || !paged);  // dense q on a paged cache is read contiguous
  if (in.k_cache) {
    f.k.bytes = std::span(const_cast<std::byte*>(in.k_cache->bytes.data()), in.k_cache->bytes.size());
    f.v.bytes = std::span(const_cast<std::byte*>(in.v_cache->bytes.data()), in.v_cache->bytes.size());
  } else {
    f.k = kernel_buffer(in.k, dtype, !paged);
    f.v = kernel_buffer(in.v, dtype, !paged);
  }
  if (packed || !paged) call.strides.q = strides3(f.q.strides, packed);
  if (!paged) {
    if (!in.k_cache) {
      call.strides.k = strides3(f.k.strides, packed);
      call.strides.v = strides3(f.v.strides, packed);
    }
  }
  if (plan.spec.mask != spec::MaskKind::none) {
    f.mask = mask_buffer(*in.mask, plan.spec, shape);
    call.mask_strides = f.mask->strides;
  }
  if (plan.spec.alibi) {
    f.slopes = alibi_buffer(*in.alibi_slopes, shape);
    call.alibi_per_batch = f.slopes->per_batch;
  }
  if (plan.spec.sinks) {
    f.sinks = *in.sinks;
    if (f.sinks.size() != shape.heads_q)
      throw CallError(fmt::format("sinks: expected {} logits (one per q head), found {}", shape.heads_q,
                                  f.sinks.size()));
  }
  if (in.score_functions) f.mods = in.score_functions(plan.spec, shape);
  if (paged) {
    f.block_table = in.cache->block_table;
    f.cache_seqlens = in.cache->cache_seqlens;
  }
  if (packed) {
    f.cu_q = in.sequences->cu_seqlens_q;
    f.cu_k = in.sequences->cu_seqlens_k;
  }
  return f;
}

// What a backward call reads beyond the forward's inputs: dO in out's
// (contiguous) layout, and out and lse when an earlier forward gave them.
struct BackwardInputs {
  KernelBuffer d_out;
  std::optional<KernelBuffer> out;
  std::vector<float> lse;
};

BackwardInputs backward_inputs(const AttentionInputs& in, const CallLayout& geometry, spec::DType dtype) {
  BackwardInputs b;
  if (in.d_out->shape != geometry.out_shape)
    throw CallError(fmt::format("{} has shape {}; dO must have the shape of out, {}", in.d_out->name,
                                io::shape_repr(in.d_out->shape), io::shape_repr(geometry.out_shape)));
  in.d_out->check_layout();
  b.d_out = kernel_buffer(*in.d_out, dtype, false);
  if (!in.out) return b;
  if (in.out->shape != geometry.out_shape)
    throw CallError(fmt::format("{} has shape {}; expected the forward's out, {}", in.out->name,
                                io::shape_repr(in.out->shape), io::shape_repr(geometry.out_shape)));
  if (in.lse->shape != geometry.lse_shape)
    throw CallError(fmt::format("{} has shape {}; expected the forward's lse, {}", in.lse->name,
                                io::shape_repr(in.lse->shape), io::shape_repr(geometry.lse_shape)));
  in.out->check_layout();
  in.lse->check_layout();
  b.out = kernel_buffer(*in.out, dtype, false);
  const std::vector<std::byte> lse_bytes = encode_as(*in.lse, spec::DType::float32);
  b.lse.resize(in.lse->elements());
  std::memcpy(b.lse.data(), lse_bytes.data(), lse_bytes.size());
  return b;
}

// The gradient of an input, written with the strides it was read with.
OutputTensor gradient_of(const HostTensor& input, const KernelBuffer& read, HostDType element, uint64_t bytes) {
  OutputTensor g{element, input.shape, read.strides, std::vector<std::byte>(bytes)};
  if (g.strides == contiguous_strides(g.shape)) g.strides.clear();
  return g;
}

// The backward kernels, once the forward's buffers are bound: dQ, dK and dV
// (d_sinks and the captured tensors' gradients for kernels with them) into `result`.
void run_backward(const KernelSet& kernels, const AttentionInputs& in, const SelectedCall& c, const ForwardCall& call,
                  const ForwardInputs& forward, BackwardInputs& backward, TensorMap& tensors, Backend& backend,
                  AttentionResult& result) {
  const plan::KernelPlan& plan = *c.plan;
  const AttentionShape& shape = c.geometry.shape;
  const DispatchPlan grads = dispatch_for(*c.entry, call);
  const HostDType element = host_dtype_of(plan.spec.dtype);
  result.dq = gradient_of(in.q, forward.q, element, grads.buffer("dq")->bytes);
  result.dk = gradient_of(in.k, forward.k, element, grads.buffer("dk")->bytes);
  result.dv = gradient_of(in.v, forward.v, element, grads.buffer("dv")->bytes);
  tensors[plan::kDOutIndex] = backward.d_out.bytes;
  tensors[plan::kDqIndex] = result.dq->bytes;
  tensors[plan::kDkIndex] = result.dk->bytes;
  tensors[plan::kDvIndex] = result.dv->bytes;
  if (plan.spec.sinks) {
    result.d_sinks.resize(shape.heads_q);
    tensors[plan::kDSinksIndex] = std::as_writable_bytes(std::span(result.d_sinks));
  }
  for (const CapturedTensor& t : c.entry->info.captures)  // gradients of the float tensors score_mod reads
    if (t.gradient)
      result.capture_gradients.push_back(
          {t.name, capture_shape(plan, t.name, shape), std::vector<float>(grads.buffer(t.gradient_buffer)->bytes / 4)});
  for (size_t r = 0; r < result.capture_gradients.size(); ++r)
    tensors[kBackwardFirstCaptureGrad + uint32_t(r)] =
        std::as_writable_bytes(std::span(result.capture_gradients[r].values));
  const RunStats run = backend.run(kernels.set.library, *c.entry, grads, tensors);
  result.stats.seconds += run.seconds;
  result.stats.compile_seconds += run.compile_seconds;
}

}  // namespace

AttentionResult run_attention(const KernelSet& kernels, const AttentionInputs& in, const AttentionOptions& options,
                              Backend& backend) {
  check_options(options);
  const SelectedCall c = select_call(kernels, in, options, backend);
  const CallLayout& geometry = c.geometry;
  const bool backward = c.plan->spec.kind == spec::Kind::backward;
  ForwardCall call = runtime_values(geometry, options, in.kv_format);
  ForwardInputs forward = forward_inputs(in, *c.plan, geometry.shape, call);
  if (c.entry->info.planned_batches) {  // a serving step: split long key ranges over the GPU
    try {
      Library::plan_batch(*c.entry, call, forward.cu_q, forward.cache_seqlens, forward.batch_plan);
    } catch (const DispatchError& e) {
      throw CallError(e.what());
    }
    call.batch_plan = &forward.batch_plan;
  }
  if (in.block_classes_mode != BlockClasses::computed && !c.entry->info.mask_mod)
    throw CallError("block_classes: kernel " + c.entry->name + " has no mask_mod, so no block classes to reuse");
  if (in.block_classes_mode == BlockClasses::only) {  // the classes alone: nothing else runs
    call.block_classes = BlockClasses::only;
    const DispatchPlan plan = dispatch_for(*c.entry, call);
    AttentionResult result;
    result.plan = c.plan;
    result.shape = geometry.shape;
    result.block_classes.resize(plan.buffer("block_classes")->bytes);
    TensorMap tensors;
    forward.bind(tensors);
    tensors[kForwardBlockClasses] = result.block_classes;
    result.stats = backend.run(kernels.set.library, *c.entry, plan, tensors);
    return result;
  }
  std::optional<BackwardInputs> gradients_in;
  if (backward) gradients_in = backward_inputs(in, geometry, c.plan->spec.dtype);

  // A backward call without out and lse first runs the forward kernel of the
  // same features for them (DESIGN.md section 10).
  const bool run_forward = !(gradients_in && gradients_in->out);
  const SpecLibrary* forward_set = &kernels.set;
  const KernelEntry* forward_kernel = c.entry;
  if (backward && run_forward) {
    forward_set = &kernels.forward_of(*c.plan);
    forward_kernel = &forward_set->library.kernels().front();
  }
  AttentionResult result;
  result.plan = c.plan;
  result.shape = geometry.shape;
  result.ran_forward = run_forward;
  result.has_lse = !run_forward || forward_kernel->info.lse;
  result.out = {host_dtype_of(c.plan->spec.dtype), geometry.out_shape, {}, {}};
  result.lse = {HostDType::float32, geometry.lse_shape, {}, {}};
  TensorMap tensors;
  forward.bind(tensors);
  std::vector<std::byte> given_classes;  // a copy: the backend binds mutable spans
  if (run_forward) {
    ForwardCall forward_call = call;
    const bool given = in.block_classes_mode == BlockClasses::given && !backward;
    if (given) forward_call.block_classes = BlockClasses::given;
    const DispatchPlan dispatch = dispatch_for(*forward_kernel, forward_call);
    if (given) {
      const uint64_t needed = dispatch.buffer("block_classes")->bytes;
      if (in.block_classes.size() != needed)
        throw CallError(fmt::format("block_classes: {} bytes, but this kernel and shape need {}: a BlockMask of "
                                    "another shape or kernel",
                                    in.block_classes.size(), needed));
      given_classes.assign(in.block_classes.begin(), in.block_classes.end());
      tensors[kForwardBlockClasses] = given_classes;
    }
    result.out.bytes.resize(dispatch.buffer("out")->bytes);
    uint64_t lse_rows = 1;
    for (uint64_t extent : geometry.lse_shape) lse_rows *= extent;
    result.lse.bytes.resize(lse_rows * 4);
    tensors[plan::kOutIndex] = result.out.bytes;
    if (result.has_lse) tensors[plan::kLseIndex] = result.lse.bytes;
    result.stats = backend.run(forward_set->library, *forward_kernel, dispatch, tensors);
  } else {
    tensors[plan::kOutIndex] = gradients_in->out->bytes;
    tensors[plan::kLseIndex] = std::as_writable_bytes(std::span(gradients_in->lse));
  }
  if (backward) run_backward(kernels, in, c, call, forward, *gradients_in, tensors, backend, result);
  return result;
}

std::optional<PreparedForward> prepare_forward(const KernelSet& kernels, const AttentionInputs& in,
                                               const AttentionOptions& options, const Backend& backend) {
  if (in.layout != TensorLayout::dense || in.k_cache || in.v_cache || in.alibi_slopes || in.sinks ||
      in.score_functions || in.d_out || in.out || in.lse || options.dropout)
    return std::nullopt;
  check_options(options);
  const SelectedCall c = select_call(kernels, in, options, backend);
  const spec::KernelSpec& kernel = c.plan->spec;
  if (kernel.kind != spec::Kind::forward || kernel.alibi || kernel.sinks || c.entry->info.dropout ||
      c.entry->info.score_mod || c.entry->info.mask_mod || !c.entry->info.captures.empty())
    return std::nullopt;
  ForwardCall call = runtime_values(c.geometry, options, in.kv_format);
  const ForwardInputs inputs = forward_inputs(in, *c.plan, c.geometry.shape, call);
  if (!inputs.q.owned.empty() || !inputs.k.owned.empty() || !inputs.v.owned.empty()) return std::nullopt;
  PreparedForward p;
  p.set = &kernels.set;
  p.entry = c.entry;
  p.plan = c.plan;
  p.shape = c.geometry.shape;
  p.q_bytes = inputs.q.bytes.size();
  p.k_bytes = inputs.k.bytes.size();
  p.v_bytes = inputs.v.bytes.size();
  if (inputs.mask) {
    p.mask = in.mask;
    p.mask->data = nullptr;
    p.mask_strides = call.mask_strides;
  }
  p.dispatch = dispatch_for(*c.entry, call);
  p.out_shape = c.geometry.out_shape;
  p.out_bytes = p.dispatch.buffer("out")->bytes;
  if (c.entry->info.lse) {
    uint64_t lse_rows = 1;
    for (uint64_t extent : c.geometry.lse_shape) lse_rows *= extent;
    p.lse_bytes = lse_rows * 4;
  }
  return p;
}

RunStats run_prepared_forward(const PreparedForward& p, const ForwardData& data, Backend& backend) {
  if (data.out.size() < p.out_bytes || data.lse.size() < p.lse_bytes)
    throw std::logic_error("run_prepared_forward: out or lse is shorter than the prepared call writes");
  // Bound into the thread's map of the previous call: its nodes are reused, so binding allocates nothing.
  thread_local TensorMap tensors;
  tensors[plan::kQIndex] = {const_cast<std::byte*>(data.q), p.q_bytes};  // kernels only read inputs
  tensors[plan::kKIndex] = {const_cast<std::byte*>(data.k), p.k_bytes};
  tensors[plan::kVIndex] = {const_cast<std::byte*>(data.v), p.v_bytes};
  std::optional<MaskBuffer> mask;
  if (p.mask) {
    HostTensor layout = *p.mask;
    layout.data = data.mask;
    mask = mask_buffer(layout, p.plan->spec, p.shape);
    if (mask->strides != p.mask_strides)
      throw std::logic_error("run_prepared_forward: the mask is not laid out as when the call was prepared");
    tensors[plan::kMaskIndex] = mask->buffer.bytes;
  } else {
    tensors.erase(plan::kMaskIndex);
  }
  tensors[plan::kOutIndex] = data.out.first(p.out_bytes);
  if (p.lse_bytes)
    tensors[plan::kLseIndex] = data.lse.first(p.lse_bytes);
  else
    tensors.erase(plan::kLseIndex);
  return backend.run(p.set->library, *p.entry, p.dispatch, tensors);
}

}  // namespace mfagen::session
