// How a call's host tensors become the buffers a kernel reads (DESIGN.md
// sections 3 and 10): in place when a tensor already is in the kernel's
// encoding and its strides are ones a kernel takes, else a converted
// C-contiguous copy; masks keep their broadcast (stride 0) dimensions; ALiBi
// slopes become float32. Each check throws CallError naming the tensor.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "mfagen/forward_dispatch.h"
#include "session/host_tensor.h"
#include "spec/kernel_spec.h"

namespace mfagen::session {

struct KernelBuffer {
  std::vector<std::byte> owned;  // the converted copy, when one was needed
  std::span<std::byte> bytes;    // what the kernel binds
  std::vector<int64_t> strides;  // element strides of `bytes`
};

// Throws CallError unless the tensor holds floating-point values.
void require_floating(const HostTensor& t);
// Throws CallError when a dimension is empty.
void require_nonempty(const HostTensor& t);

// `in_place`: the caller's strides may be kept when no two elements share
// memory (gradients are written with them); otherwise only C-contiguous
// memory is read in place.
KernelBuffer kernel_buffer(const HostTensor& t, spec::DType dtype, bool in_place);

// (batch, head, row) strides of a dense (B, H, S, D) or packed (T, H, D) tensor.
Strides3 strides3(const std::vector<int64_t>& strides, bool packed);

struct MaskBuffer {
  KernelBuffer buffer;
  std::array<uint64_t, 4> strides{};  // over (B, Hq, Sq, Sk), 0 along broadcast dimensions
};
// A bool mask for mask "bool" kernels, float values (NaN and +inf refused)
// for "additive" ones, of 2 to 4 dimensions broadcasting to (B, Hq, Sq, Sk).
MaskBuffer mask_buffer(const HostTensor& mask, const spec::KernelSpec& kernel, const AttentionShape& shape);
// The strides over (B, Hq, Sq, Sk) of a mask bound as it is (its layout,
// rank and broadcast checked as above; its values and dtype not read): the
// MPS bridge, which binds any mask in place and checks values on the device.
std::array<uint64_t, 4> mask_broadcast_strides(const HostTensor& mask, const AttentionShape& shape);

struct SlopeBuffer {
  std::vector<float> slopes;
  bool per_batch = false;
};
// float32 slopes of shape (Hq,) or (B, Hq), finite.
SlopeBuffer alibi_buffer(const HostTensor& t, const AttentionShape& shape);

}  // namespace mfagen::session
