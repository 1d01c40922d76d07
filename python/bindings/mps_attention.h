// The Metal bridge of mfagen.torch (DESIGN.md section 16): one attention call
// on PyTorch MPS tensors, encoded by the Metal backend onto PyTorch's current
// MPS stream, into the compute encoder PyTorch's own kernels share, inside
// the stream's serial dispatch queue. The tensors' own MTLBuffers are bound
// at their storage offsets (no copy, no host read of their data); outputs
// and the kernels' scratch buffers are tensors the caller's `empty_strided`
// allocates on the same device, so PyTorch's allocator orders their reuse on
// the stream. Nothing is committed or waited for: the results are ready when
// PyTorch's stream has run (as for any MPS op).
//
// Served: dense (B, H, S, D) q, k, v of the kernel's dtype read in place (any
// non-overlapping strides with unit-stride rows), a bool mask, causal modes,
// GQA, scale, softcap, a window, dropout; the forward, and the backward given
// the forward's out and lse. What needs a host read of a tensor (an additive
// mask's NaN check, ALiBi slopes, cu_seqlens, block tables, captured
// tensors) is not served on MPS: NotImplementedError naming the argument.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>

#include "jit_kernels.h"

namespace mfagen::python {

struct MpsCall {
  pybind11::object mask, d_out, out, lse;  // None when absent
  std::optional<double> scale, softcap, dropout;
  std::optional<int64_t> window_left, window_right;
  uint64_t seed = 0;
  uint32_t offset = 0;
  // empty_strided(shape, strides, dtype name) -> a new MPS tensor on q's device.
  pybind11::object empty_strided;
};

// Encodes the call of the kernel `spec_json` (forward, or backward with dO,
// out and lse); returns {"kernel": name, "out", "lse"} or {"dq", "dk", "dv"}.
pybind11::dict mps_attention(JitKernels& jit, const std::string& spec_json, pybind11::handle q, pybind11::handle k,
                             pybind11::handle v, const MpsCall& call);

}  // namespace mfagen::python
