// The optional inputs of `mfagen run` (DESIGN.md section 10): a mask
// broadcastable to (B, Hq, Sq, Sk) and ALiBi slopes (Hq,) or (B, Hq), read
// from .npy files and checked against the call's shape and the kernel.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "mfagen/forward_dispatch.h"
#include "spec/kernel_spec.h"

namespace mfagen::cli {

struct MaskTensor {
  std::array<uint64_t, 4> extents{};  // aligned to (B, Hq, Sq, Sk): the full size or 1
  std::vector<std::byte> bytes;       // C order over `extents`, in the kernel's mask encoding
};

// A bool mask (|b1) for mask "bool" kernels, a float mask (<f4, <f2, <f8;
// -inf hides a key) rounded to the kernel's dtype for mask "additive".
// Shapes of 2 to 4 dimensions broadcast numpy-style (right-aligned).
MaskTensor read_mask(const std::string& file, const spec::KernelSpec& kernel, const AttentionShape& shape);

struct AlibiInput {
  bool per_batch = false;
  std::vector<std::byte> bytes;  // float32 slopes
};

// <f4 slopes of shape (Hq,) or (B, Hq).
AlibiInput read_alibi_slopes(const std::string& file, const AttentionShape& shape);

}  // namespace mfagen::cli
