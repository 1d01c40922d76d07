#include "profile/synthetic_call.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>

#include "session/tensor_encoding.h"

namespace mfagen::profile {
namespace {

// `bytes` filled with a block of uniform values in [-1, 1] rounded to the
// dtype, repeated (the values matter little to the counts; a fixed seed keeps
// runs identical).
void fill_random(std::span<std::byte> bytes, spec::DType dtype) {
  std::mt19937 rng(20261124);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> block(4096);
  for (double& x : block) x = session::round_to_element(dtype, uniform(rng));
  const std::vector<std::byte> encoded = session::encode_elements(block, dtype);
  for (size_t at = 0; at < bytes.size(); at += encoded.size())
    std::memcpy(bytes.data() + at, encoded.data(), std::min(encoded.size(), bytes.size() - at));
}

void fill_float(std::span<std::byte> bytes, float value) {
  for (size_t at = 0; at + sizeof(float) <= bytes.size(); at += sizeof(float)) std::memcpy(bytes.data() + at, &value, 4);
}

}  // namespace

ForwardCall synthetic_call(const plan::KernelPlan& p, const plan::CostShape& shape) {
  const AttentionShape attention{shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q, shape.seq_k};
  ForwardCall call;
  call.shape = attention;
  call.strides = contiguous_bhsd(attention, p.spec.head_dim, p.spec.head_dim_v);
  if (p.spec.softcap) call.softcap = 30;
  if (p.spec.window) call.window_left = shape.window_left, call.window_right = shape.window_right;
  if (p.spec.mask != spec::MaskKind::none) call.mask_strides = broadcast_strides({1, 1, shape.seq_q, shape.seq_k});
  return call;
}

std::map<uint32_t, std::vector<std::byte>> synthetic_tensors(const DispatchPlan& dispatch, const plan::KernelPlan& p,
                                                             const plan::CostShape& shape) {
  std::map<uint32_t, std::vector<std::byte>> tensors;
  for (const BufferRequirement& b : dispatch.buffers) {
    if (b.scratch || b.index == plan::kParamsIndex) continue;
    std::vector<std::byte>& bytes = tensors[b.index];
    bytes.assign(b.bytes, std::byte{0});
    switch (b.index) {
      case plan::kQIndex:
      case plan::kKIndex:
      case plan::kVIndex:
      case plan::kDOutIndex:
      case plan::kOutIndex:
        fill_random(bytes, p.spec.dtype);
        break;
      case plan::kLseIndex:
        fill_float(bytes, float(std::log(double(shape.seq_k)) + 0.5));
        break;
      case plan::kMaskIndex:
        if (p.spec.mask == spec::MaskKind::boolean) std::fill(bytes.begin(), bytes.end(), std::byte{1});
        break;  // additive: zeros, every key visible
      case plan::kAlibiIndex:
        fill_float(bytes, 0.0625f);
        break;
      default:
        break;
    }
  }
  return tensors;
}

}  // namespace mfagen::profile
