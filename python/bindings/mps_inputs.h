// The inputs of an MPS call beyond q, k and v (DESIGN.md section 16): an
// attention mask, ALiBi slopes, attention sinks and cu_seqlens, bound as
// they are, like q, k and v. On the cpu backend the session library reads
// their values on the host (a float mask's NaN/+inf check, the slopes and
// sinks copied into float vectors, the cu_seqlens checked and their longest
// sequence found). On MPS a host read would wait for PyTorch's stream on
// every call, so these functions check only what the tensors' metadata says
// (dtype, shape, layout); their values are checked on the device by
// mfagen/_mps.py, which turns every result of the call to NaN when a check
// fails (docs/python.md), and the grid comes from the max_seqlen ints the
// caller gives, as flash-attn's CUDA kernels take them.
#pragma once

#include <array>
#include <cstdint>

#include "mfagen/forward_dispatch.h"
#include "mps_tensor.h"
#include "session/call_layout.h"
#include "spec/kernel_spec.h"

namespace mfagen::python {

// The mask's element strides over (B, Hq, Sq, Sk), 0 where it broadcasts: a
// bool mask for mask "bool" kernels, one of the kernel's dtype for
// "additive" ones, of 2 to 4 dimensions (TypeError / ValueError otherwise).
std::array<uint64_t, 4> mask_strides(const MpsTensor& mask, const spec::KernelSpec& kernel,
                                     const AttentionShape& shape);

// Whether float32 slopes are (B, Hq) rather than (Hq,); contiguous.
bool alibi_per_batch(const MpsTensor& slopes, const AttentionShape& shape);

// float32 (Hq,) logits, contiguous (its gradient is written as it).
void check_sinks(const MpsTensor& sinks, const AttentionShape& shape);

// Packed sequences' sizes from the int32 (batch + 1,) cu_seqlens' length and
// the longest sequences the caller declares (>= 1); the contents are not read.
session::SequenceSizes packed_sizes(const MpsTensor& cu_seqlens_q, const MpsTensor& cu_seqlens_k, int64_t max_seqlen_q,
                                    int64_t max_seqlen_k);

}  // namespace mfagen::python
