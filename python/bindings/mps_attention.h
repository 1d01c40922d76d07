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
// Served: dense (B, H, S, D) or packed varlen (T, H, D) q, k, v of the
// kernel's dtype read in place (any non-overlapping strides with unit-stride
// rows), a bool or additive mask, ALiBi slopes, attention sinks, causal
// modes, GQA, scale, softcap, a window, dropout; the forward, and the
// backward given the forward's out and lse (with d_sinks for sinks kernels).
// The inputs whose values the cpu path checks on the host are bound unread
// (mps_inputs.h); varlen calls give their longest sequences. Paged caches
// (block tables, cache lengths) and captured tensors are not served on MPS:
// NotImplementedError naming the argument.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>

#include "jit_kernels.h"

namespace mfagen::python {

struct MpsCall {
  pybind11::object mask, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, d_out, out, lse;  // None when absent
  std::optional<double> scale, softcap, dropout;
  std::optional<int64_t> window_left, window_right;
  std::optional<int64_t> max_seqlen_q, max_seqlen_k;  // with cu_seqlens: the grid's (not read from them)
  uint64_t seed = 0;
  uint32_t offset = 0;
  // empty_strided(shape, strides, dtype name) -> a new MPS tensor on q's device.
  pybind11::object empty_strided;
};

// Encodes the call of the kernel `spec_json` (forward, or backward with dO,
// out and lse); returns {"kernel": name, "out", "lse"} or {"dq", "dk", "dv"}
// (and "d_sinks").
pybind11::dict mps_attention(JitKernels& jit, const std::string& spec_json, pybind11::handle q, pybind11::handle k,
                             pybind11::handle v, const MpsCall& call);

// Adds mps_attention to the module `m` as _mfagen.mps_attention(spec, q, k, v, *, mask=..., ...,
// empty_strided), serving calls from `jit`.
void add_mps_attention(pybind11::module_& m, JitKernels& jit);

}  // namespace mfagen::python
