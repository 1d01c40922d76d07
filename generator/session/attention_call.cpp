#include "session/attention_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <span>

#include "io/npy.h"
#include "plan/kernel_plan.h"
#include "session/call_error.h"
#include "session/kernel_selection.h"

namespace mfagen::session {
namespace {

// A tensor as a kernel reads it: the caller's memory when it already is in
// the kernel's encoding, else a converted C-contiguous copy.
struct KernelBuffer {
  std::vector<std::byte> owned;
  std::span<std::byte> bytes;
  std::vector<int64_t> strides;
};

// Whether no two elements of the tensor share memory: the gradients written
// with its strides must not overlap either.
bool non_overlapping(const HostTensor& t) {
  const std::vector<int64_t> s = t.element_strides();
  std::vector<size_t> dims;
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] > 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
  int64_t reach = 1;  // elements spanned by the dimensions so far
  for (size_t d : dims) {
    if (s[d] < reach) return false;
    reach = s[d] * int64_t(t.shape[d]);
  }
  return true;
}

void require_floating(const HostTensor& t) {
  if (!is_floating(t.dtype))
    throw CallError(fmt::format("{}: dtype {}; expected float16, bfloat16, float32 or float64", t.name,
                                to_string(t.dtype)));
}

// `in_place`: the caller's strides may be kept (else only C-contiguous memory is read in place).
KernelBuffer kernel_buffer(const HostTensor& t, spec::DType dtype, bool in_place) {
  require_floating(t);
  KernelBuffer b;
  const bool contiguous = t.element_strides() == contiguous_strides(t.shape);
  if (t.dtype == host_dtype_of(dtype) && (contiguous || (in_place && non_overlapping(t)))) {
    b.bytes = {const_cast<std::byte*>(t.data), t.span_bytes()};  // kernels only read inputs
    b.strides = t.element_strides();
    return b;
  }
  b.owned = encode_as(t, dtype);
  b.bytes = b.owned;
  b.strides = contiguous_strides(t.shape);
  return b;
}

// (batch, head, row) strides of a dense (B, H, S, D) or packed (T, H, D) tensor.
Strides3 strides3(const std::vector<int64_t>& s, bool packed) {
  if (packed) return {0, uint64_t(s[1]), uint64_t(s[0])};
  return {uint64_t(s[0]), uint64_t(s[1]), uint64_t(s[2])};
}

void require_nonempty(const HostTensor& t) {
  for (uint64_t extent : t.shape)
    if (extent == 0)
      throw CallError(fmt::format("{}: shape {} has an empty dimension", t.name, io::shape_repr(t.shape)));
}

struct MaskBuffer {
  KernelBuffer buffer;
  std::array<uint64_t, 4> strides{};
};

MaskBuffer mask_buffer(const HostTensor& mask, const spec::KernelSpec& kernel, const AttentionShape& shape) {
  mask.check_layout();
  const std::array<uint64_t, 4> full = {shape.batch, shape.heads_q, shape.seq_q, shape.seq_k};
  const std::vector<uint64_t> full_shape(full.begin(), full.end());
  if (mask.shape.size() < 2 || mask.shape.size() > 4)
    throw CallError(fmt::format("{}: expected 2 to 4 dimensions broadcastable to (B, Hq, Sq, Sk) = {}, found shape {}",
                                mask.name, io::shape_repr(full_shape), io::shape_repr(mask.shape)));
  std::array<uint64_t, 4> extents{1, 1, 1, 1};
  const size_t skip = 4 - mask.shape.size();
  for (size_t d = 0; d < mask.shape.size(); ++d) {
    if (mask.shape[d] != 1 && mask.shape[d] != full[skip + d])
      throw CallError(fmt::format("{}: shape {} does not broadcast to (B, Hq, Sq, Sk) = {}", mask.name,
                                  io::shape_repr(mask.shape), io::shape_repr(full_shape)));
    extents[skip + d] = mask.shape[d];
  }
  MaskBuffer m;
  if (kernel.mask == spec::MaskKind::boolean) {
    if (mask.dtype != HostDType::boolean)
      throw CallError(fmt::format("{}: kernel {} takes a bool mask: expected dtype bool, found {}", mask.name,
                                  kernel.name, to_string(mask.dtype)));
    m.buffer.bytes = {const_cast<std::byte*>(mask.data), mask.span_bytes()};
    m.buffer.strides = mask.element_strides();
  } else {
    if (!is_floating(mask.dtype))
      throw CallError(fmt::format("{}: kernel {} takes an additive mask: expected a float dtype, found {}", mask.name,
                                  kernel.name, to_string(mask.dtype)));
    // Values the kernel cannot take: NaN, and +inf (it would make a row's softmax NaN).
    std::vector<uint64_t> index(mask.shape.size(), 0);
    for (;;) {
      const double x = mask.value_at(index);
      if (std::isnan(x) || x == INFINITY)
        throw CallError(fmt::format("{}: holds NaN or +inf; an additive mask takes finite values and -inf", mask.name));
      size_t d = index.size();
      while (d > 0 && ++index[d - 1] == mask.shape[d - 1]) index[--d] = 0;
      if (d == 0) break;
    }
    m.buffer = kernel_buffer(mask, kernel.dtype, true);
  }
  for (size_t d = 0; d < mask.shape.size(); ++d)
    m.strides[skip + d] = mask.shape[d] == 1 ? 0 : uint64_t(m.buffer.strides[d]);
  return m;
}

struct SlopeBuffer {
  std::vector<float> slopes;
  bool per_batch = false;
};

SlopeBuffer alibi_buffer(const HostTensor& t, const AttentionShape& shape) {
  t.check_layout();
  if (t.dtype != HostDType::float32)
    throw CallError(fmt::format("{}: expected dtype float32, found {}", t.name, to_string(t.dtype)));
  SlopeBuffer s;
  if (t.shape == std::vector<uint64_t>{shape.heads_q}) {
    s.per_batch = false;
  } else if (t.shape == std::vector<uint64_t>{shape.batch, shape.heads_q}) {
    s.per_batch = true;
  } else {
    throw CallError(fmt::format("{}: expected shape ({},) or ({}, {}), found {}", t.name, shape.heads_q, shape.batch,
                                shape.heads_q, io::shape_repr(t.shape)));
  }
  const std::vector<std::byte> bytes = encode_as(t, spec::DType::float32);
  s.slopes.resize(t.elements());
  std::memcpy(s.slopes.data(), bytes.data(), bytes.size());
  for (float x : s.slopes)
    if (!std::isfinite(x)) throw CallError(fmt::format("{}: holds NaN or infinite values", t.name));
  return s;
}

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
  CallRequest r;
  r.batch = geometry.shape.batch;
  r.head_dim = geometry.head_dim;
  r.head_dim_v = geometry.head_dim_v;
  r.heads_q = geometry.shape.heads_q;
  r.heads_kv = geometry.shape.heads_kv;
  r.seq_q = geometry.shape.seq_q;
  r.seq_k = geometry.shape.seq_k;
  r.varlen = in.layout == TensorLayout::packed;
  r.paged = in.layout == TensorLayout::paged;
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

}  // namespace

AttentionResult run_attention(const KernelSet& kernels, const AttentionInputs& in, const AttentionOptions& options,
                              Backend& backend) {
  check_options(options);
  const bool packed = in.layout == TensorLayout::packed, paged = in.layout == TensorLayout::paged;
  if (packed != in.sequences.has_value())
    throw CallError(packed ? "packed q, k and v need cu_seqlens_q and cu_seqlens_k"
                           : "cu_seqlens_q and cu_seqlens_k are for packed q, k and v");
  if (paged != in.cache.has_value())
    throw CallError(paged ? "a paged cache needs block_table and cache_seqlens"
                          : "block_table and cache_seqlens are for a paged cache");
  if (in.k_cache.has_value() != in.v_cache.has_value())
    throw std::logic_error("run_attention: k_cache and v_cache go together");
  const bool quantized = in.k_cache.has_value();
  for (const HostTensor* t : {&in.q, &in.k, &in.v}) {
    if (quantized && t != &in.q) continue;
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
  if (paged) sizes = {in.q.shape[0], 0, in.cache->longest, in.cache->max_pages};
  if (quantized == (in.kv_format == KvFormat::elements))
    throw std::logic_error("run_attention: k_cache and v_cache come with their kv_format");
  const KvFormat kv_format = in.kv_format;
  const CallLayout geometry = call_layout(in.layout, q_shape, k_shape, v_shape, sizes, kv_format);
  const AttentionShape& shape = geometry.shape;

  const CallRequest request = request_for(geometry, in, options, kv_format);
  const KernelEntry& entry = select_kernel(kernels.set.library, request, kernels.name, backend.capabilities());
  const plan::KernelPlan& plan = kernels.set.plan_of(entry);
  const spec::DType dtype = plan.spec.dtype;
  const HostDType element = host_dtype_of(dtype);
  const bool backward = plan.spec.kind == spec::Kind::backward;
  const bool fp8 = kv_format == KvFormat::fp8_e4m3;
  if (!fp8 && (options.k_scale || options.v_scale))
    throw CallError("k_scale and v_scale scale fp8_e4m3 caches; this call's k and v are not fp8");
  if (in.out.has_value() != in.lse.has_value() || (in.out && !backward))
    throw CallError("out and lse of an earlier forward go together, with dO, to a backward kernel");

  ForwardCall call;
  geometry.apply_to(call);
  call.scale = options.scale.value_or(0);
  call.softcap = options.softcap.value_or(0);
  call.window_left = options.window_left.value_or(-1);
  call.window_right = options.window_right.value_or(-1);
  if (fp8) {
    call.k_scale = options.k_scale.value_or(1);
    call.v_scale = options.v_scale.value_or(1);
  }
  if (options.dropout) {
    call.dropout_p = *options.dropout;
    call.dropout_seed = options.seed;
    call.dropout_offset = options.offset;
  }

  // q, k and v in place where their layout allows (dense and packed strides);
  // paged caches are read contiguous.
  const bool in_place = !paged;
  KernelBuffer q = kernel_buffer(in.q, dtype, in_place);
  KernelBuffer k, v;
  if (quantized) {
    k.bytes = std::span(const_cast<std::byte*>(in.k_cache->bytes.data()), in.k_cache->bytes.size());
    v.bytes = std::span(const_cast<std::byte*>(in.v_cache->bytes.data()), in.v_cache->bytes.size());
  } else {
    k = kernel_buffer(in.k, dtype, in_place);
    v = kernel_buffer(in.v, dtype, in_place);
    if (!paged) {
      call.strides.k = strides3(k.strides, packed);
      call.strides.v = strides3(v.strides, packed);
    }
  }
  if (!paged) call.strides.q = strides3(q.strides, packed);

  std::optional<MaskBuffer> mask;
  if (plan.spec.mask != spec::MaskKind::none) {
    mask = mask_buffer(*in.mask, plan.spec, shape);
    call.mask_strides = mask->strides;
  }
  std::optional<SlopeBuffer> slopes;
  if (plan.spec.alibi) {
    slopes = alibi_buffer(*in.alibi_slopes, shape);
    call.alibi_per_batch = slopes->per_batch;
  }
  std::vector<float> sinks;
  if (plan.spec.sinks) {
    sinks = *in.sinks;
    if (sinks.size() != shape.heads_q)
      throw CallError(fmt::format("sinks: expected {} logits (one per q head), found {}", shape.heads_q, sinks.size()));
  }
  ScoreFunctionInputs mods;
  if (in.score_functions) mods = in.score_functions(plan.spec, shape);

  std::optional<KernelBuffer> d_out, given_out;
  std::vector<float> given_lse;
  if (backward) {
    if (in.d_out->shape != geometry.out_shape)
      throw CallError(fmt::format("{} has shape {}; dO must have the shape of out, {}", in.d_out->name,
                                  io::shape_repr(in.d_out->shape), io::shape_repr(geometry.out_shape)));
    in.d_out->check_layout();
    d_out = kernel_buffer(*in.d_out, dtype, false);  // dO takes the strides of out: contiguous
    if (in.out) {
      if (in.out->shape != geometry.out_shape)
        throw CallError(fmt::format("{} has shape {}; expected the forward's out, {}", in.out->name,
                                    io::shape_repr(in.out->shape), io::shape_repr(geometry.out_shape)));
      if (in.lse->shape != geometry.lse_shape)
        throw CallError(fmt::format("{} has shape {}; expected the forward's lse, {}", in.lse->name,
                                    io::shape_repr(in.lse->shape), io::shape_repr(geometry.lse_shape)));
      in.out->check_layout();
      in.lse->check_layout();
      given_out = kernel_buffer(*in.out, dtype, false);
      const std::vector<std::byte> lse_bytes = encode_as(*in.lse, spec::DType::float32);
      given_lse.resize(in.lse->elements());
      std::memcpy(given_lse.data(), lse_bytes.data(), lse_bytes.size());
    }
  }

  // A backward call without out and lse first runs the forward kernel of the
  // same features for them (DESIGN.md section 10).
  const bool run_forward = !given_out.has_value();
  const SpecLibrary* forward_set = &kernels.set;
  const KernelEntry* forward = &entry;
  if (backward && run_forward) {
    forward_set = &kernels.forward_of(plan);
    forward = &forward_set->library.kernels().front();
  }
  const DispatchPlan dispatch = dispatch_for(run_forward ? *forward : entry, call);

  AttentionResult result;
  result.plan = &plan;
  result.shape = shape;
  result.ran_forward = run_forward;
  result.has_lse = run_forward ? forward->info.lse : true;
  result.out = {element, geometry.out_shape, {}, {}};
  result.lse = {HostDType::float32, geometry.lse_shape, {}, {}};
  if (run_forward) {
    result.out.bytes.resize(dispatch.buffer("out")->bytes);
    uint64_t lse_rows = 1;
    for (uint64_t extent : geometry.lse_shape) lse_rows *= extent;
    result.lse.bytes.resize(lse_rows * 4);
  }
  std::span<std::byte> out_span = run_forward ? std::span(result.out.bytes) : given_out->bytes;
  std::span<std::byte> lse_span =
      run_forward ? std::span(result.lse.bytes) : std::as_writable_bytes(std::span(given_lse));

  TensorMap tensors = {
      {plan::kQIndex, q.bytes}, {plan::kKIndex, k.bytes}, {plan::kVIndex, v.bytes}, {plan::kOutIndex, out_span}};
  if (result.has_lse) tensors[plan::kLseIndex] = lse_span;
  if (mask) tensors[plan::kMaskIndex] = mask->buffer.bytes;
  if (slopes) tensors[plan::kAlibiIndex] = std::as_writable_bytes(std::span(slopes->slopes));
  if (!sinks.empty()) tensors[plan::kSinksIndex] = std::as_writable_bytes(std::span(sinks));
  if (!mods.scalars.empty()) tensors[kForwardModScalars] = std::as_writable_bytes(std::span(mods.scalars));
  for (size_t i = 0; i < mods.captures.size(); ++i) tensors[kForwardFirstCapture + uint32_t(i)] = mods.captures[i];
  std::vector<int32_t> block_table, cache_seqlens, cu_q, cu_k;  // mutable copies: the backend binds spans
  if (paged) {
    block_table = in.cache->block_table;
    cache_seqlens = in.cache->cache_seqlens;
    tensors[plan::kBlockTableIndex] = std::as_writable_bytes(std::span(block_table));
    tensors[plan::kCacheSeqlensIndex] = std::as_writable_bytes(std::span(cache_seqlens));
  }
  if (packed) {
    cu_q = in.sequences->cu_seqlens_q;
    cu_k = in.sequences->cu_seqlens_k;
    tensors[plan::kCuSeqlensQIndex] = std::as_writable_bytes(std::span(cu_q));
    tensors[plan::kCuSeqlensKIndex] = std::as_writable_bytes(std::span(cu_k));
  }
  if (run_forward) result.stats = backend.run(forward_set->library, *forward, dispatch, tensors);
  if (!backward) return result;

  const DispatchPlan grads = dispatch_for(entry, call);
  auto gradient = [&](const HostTensor& input, const KernelBuffer& read, const char* buffer) {
    OutputTensor g{element, input.shape, read.strides, {}};
    if (g.strides == contiguous_strides(g.shape)) g.strides.clear();
    g.bytes.resize(grads.buffer(buffer)->bytes);
    return g;
  };
  result.dq = gradient(in.q, q, "dq");
  result.dk = gradient(in.k, k, "dk");
  result.dv = gradient(in.v, v, "dv");
  tensors[plan::kDOutIndex] = d_out->bytes;
  tensors[plan::kDqIndex] = result.dq->bytes;
  tensors[plan::kDkIndex] = result.dk->bytes;
  tensors[plan::kDvIndex] = result.dv->bytes;
  if (plan.spec.sinks) {
    result.d_sinks.resize(shape.heads_q);
    tensors[plan::kDSinksIndex] = std::as_writable_bytes(std::span(result.d_sinks));
  }
  for (const CapturedTensor& t : entry.info.captures)  // gradients of the float tensors score_mod reads
    if (t.gradient)
      result.capture_gradients.push_back(
          {t.name, capture_shape(plan, t.name, shape), std::vector<float>(grads.buffer(t.gradient_buffer)->bytes / 4)});
  for (size_t r = 0; r < result.capture_gradients.size(); ++r)
    tensors[kBackwardFirstCaptureGrad + uint32_t(r)] =
        std::as_writable_bytes(std::span(result.capture_gradients[r].values));
  const RunStats backward_run = backend.run(kernels.set.library, entry, grads, tensors);
  result.stats.seconds += backward_run.seconds;
  result.stats.compile_seconds += backward_run.compile_seconds;
  return result;
}

}  // namespace mfagen::session
