#include "attention_call.h"

#include <cmath>
#include <cstring>

#include "attention_reference.h"
#include "dtype_rounding.h"
#include "random_inputs.h"

namespace mfagen::test {
namespace {

reference::ElementType element_type(ElementType t) {
  switch (t) {
    case ElementType::float16: return reference::ElementType::float16;
    case ElementType::bfloat16: return reference::ElementType::bfloat16;
    case ElementType::float32: return reference::ElementType::float32;
  }
  return reference::ElementType::float32;
}

std::vector<std::byte> encode(const std::vector<double>& values, reference::ElementType type) {
  const size_t width = type == reference::ElementType::float32 ? 4 : 2;
  std::vector<std::byte> bytes(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = float(values[i]);
    if (type == reference::ElementType::float32) {
      std::memcpy(&bytes[i * 4], &x, 4);
    } else {
      const uint16_t bits = type == reference::ElementType::float16 ? reference::half_bits(x) : reference::bfloat_bits(x);
      std::memcpy(&bytes[i * 2], &bits, 2);
    }
  }
  return bytes;
}

std::vector<std::byte> float_bytes(const std::vector<double>& values) {
  return encode(values, reference::ElementType::float32);
}

reference::CausalMode causal_mode(CausalMode c) {
  switch (c) {
    case CausalMode::none: return reference::CausalMode::none;
    case CausalMode::top_left: return reference::CausalMode::top_left;
    case CausalMode::bottom_right: return reference::CausalMode::bottom_right;
  }
  return reference::CausalMode::none;
}

}  // namespace

std::vector<float> widen(const std::vector<std::byte>& bytes, reference::ElementType type) {
  const size_t width = type == reference::ElementType::float32 ? 4 : 2;
  std::vector<float> values(bytes.size() / width);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == reference::ElementType::float32) {
      std::memcpy(&values[i], &bytes[i * 4], 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, &bytes[i * 2], 2);
      values[i] = type == reference::ElementType::float16 ? reference::half_from_bits(bits)
                                                           : reference::bfloat_from_bits(bits);
    }
  }
  return values;
}

AttentionCall make_call(const KernelEntry& kernel, uint64_t seq_q, uint64_t seq_k, uint64_t seed) {
  const ForwardKernelInfo& info = kernel.info;
  AttentionCall c;
  c.type = element_type(kernel.dtype);
  reference::AttentionProblem& p = c.problem;
  p.heads_q = info.gqa ? 4 : 2;
  p.heads_kv = 2;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = info.head_dim;
  p.head_dim_v = info.head_dim_v;
  p.causal = causal_mode(kernel.causal);
  p.q = reference::random_tensor(p.heads_q * seq_q * p.head_dim, seed, c.type);
  p.k = reference::random_tensor(p.heads_kv * seq_k * p.head_dim, seed + 1, c.type);
  p.v = reference::random_tensor(p.heads_kv * seq_k * p.head_dim_v, seed + 2, c.type);

  ForwardCall& call = c.call;
  call.shape = {1, p.heads_q, p.heads_kv, seq_q, seq_k};
  call.strides = contiguous_bhsd(call.shape, p.head_dim, p.head_dim_v);
  if (info.softcap) call.softcap = p.softcap = 20;
  if (info.window) {
    call.window_left = 9, call.window_right = 3;
    p.window = {{9, 3}};
  }
  std::vector<std::byte> mask;
  if (info.mask != MaskInput::none) {
    p.mask_shape = {1, p.heads_q, seq_q, seq_k};
    call.mask_strides = broadcast_strides(p.mask_shape);
    const std::vector<double> noise = reference::random_tensor(p.heads_q * seq_q * seq_k, seed + 3, c.type);
    if (info.mask == MaskInput::boolean) {
      for (double x : noise) p.bool_mask.push_back(x > -0.8 ? 1 : 0);
      mask.assign(reinterpret_cast<const std::byte*>(p.bool_mask.data()),
                  reinterpret_cast<const std::byte*>(p.bool_mask.data()) + p.bool_mask.size());
    } else {
      for (double x : noise) p.additive_mask.push_back(reference::round_to(c.type, x * 0.5));
      mask = encode(p.additive_mask, c.type);
    }
  }
  if (info.alibi)
    for (uint64_t h = 0; h < p.heads_q; ++h) p.alibi_slopes.push_back(std::exp2(-double(h + 1)));

  c.inputs[kForwardQ] = encode(p.q, c.type);
  c.inputs[kForwardK] = encode(p.k, c.type);
  c.inputs[kForwardV] = encode(p.v, c.type);
  if (!mask.empty()) c.inputs[kForwardMask] = mask;
  if (info.alibi) c.inputs[kForwardAlibi] = float_bytes(p.alibi_slopes);
  const DispatchPlan plan = Library::plan(kernel, call);
  if (info.backward) {
    // The forward quantities the backward reads: out and lse of the same
    // math in the input dtype, as a forward kernel would give them.
    const reference::AttentionResult forward = reference::naive_attention_in_dtype(p, c.type);
    c.inputs[kForwardOut] = encode(forward.out, c.type);
    c.inputs[kForwardLse] = float_bytes(forward.lse);
    c.d_out = reference::random_tensor(forward.out.size(), seed + 4, c.type);
    c.inputs[kBackwardDOut] = encode(c.d_out, c.type);
  }
  for (const BufferRequirement& b : plan.buffers)
    if (!b.scratch && b.index != kForwardParams && !c.inputs.count(b.index)) c.inputs[b.index].assign(b.bytes, std::byte{0});
  return c;
}

TensorMap bind(std::map<uint32_t, std::vector<std::byte>>& storage) {
  TensorMap tensors;
  for (auto& [index, bytes] : storage) tensors[index] = bytes;
  return tensors;
}

}  // namespace mfagen::test
