#include "session/kernel_buffers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/npy.h"
#include "session/call_error.h"

namespace mfagen::session {
namespace {

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

}  // namespace

void require_floating(const HostTensor& t) {
  if (!is_floating(t.dtype))
    throw CallError(fmt::format("{}: dtype {}; expected float16, bfloat16, float32 or float64", t.name,
                                to_string(t.dtype)));
}

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

Strides3 strides3(const std::vector<int64_t>& s, bool packed) {
  if (packed) return {0, uint64_t(s[1]), uint64_t(s[0])};
  return {uint64_t(s[0]), uint64_t(s[1]), uint64_t(s[2])};
}

void require_nonempty(const HostTensor& t) {
  for (uint64_t extent : t.shape)
    if (extent == 0)
      throw CallError(fmt::format("{}: shape {} has an empty dimension", t.name, io::shape_repr(t.shape)));
}

namespace {

// The dimension of (B, Hq, Sq, Sk) the mask's first dimension stands for,
// after checking that it has 2 to 4 dimensions broadcasting to them.
size_t broadcast_offset(const HostTensor& mask, const AttentionShape& shape) {
  const std::array<uint64_t, 4> full = {shape.batch, shape.heads_q, shape.seq_q, shape.seq_k};
  const std::vector<uint64_t> full_shape(full.begin(), full.end());
  if (mask.shape.size() < 2 || mask.shape.size() > 4)
    throw CallError(fmt::format("{}: expected 2 to 4 dimensions broadcastable to (B, Hq, Sq, Sk) = {}, found shape {}",
                                mask.name, io::shape_repr(full_shape), io::shape_repr(mask.shape)));
  const size_t skip = 4 - mask.shape.size();
  for (size_t d = 0; d < mask.shape.size(); ++d)
    if (mask.shape[d] != 1 && mask.shape[d] != full[skip + d])
      throw CallError(fmt::format("{}: shape {} does not broadcast to (B, Hq, Sq, Sk) = {}", mask.name,
                                  io::shape_repr(mask.shape), io::shape_repr(full_shape)));
  return skip;
}

// The strides over (B, Hq, Sq, Sk) of memory holding the mask with these
// element strides: 0 along the dimensions it broadcasts.
std::array<uint64_t, 4> strides_over_call(const HostTensor& mask, size_t skip, const std::vector<int64_t>& strides) {
  std::array<uint64_t, 4> out{};
  for (size_t d = 0; d < mask.shape.size(); ++d) out[skip + d] = mask.shape[d] == 1 ? 0 : uint64_t(strides[d]);
  return out;
}

}  // namespace

std::array<uint64_t, 4> mask_broadcast_strides(const HostTensor& mask, const AttentionShape& shape) {
  mask.check_layout();
  return strides_over_call(mask, broadcast_offset(mask, shape), mask.element_strides());
}

MaskBuffer mask_buffer(const HostTensor& mask, const spec::KernelSpec& kernel, const AttentionShape& shape) {
  mask.check_layout();
  const size_t skip = broadcast_offset(mask, shape);
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
  m.strides = strides_over_call(mask, skip, m.buffer.strides);
  return m;
}

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

}  // namespace mfagen::session
