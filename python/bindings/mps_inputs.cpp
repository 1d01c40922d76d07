#include "mps_inputs.h"

#include <pybind11/pybind11.h>

#include <fmt/format.h>

#include <vector>

#include "io/npy.h"
#include "session/call_error.h"
#include "session/kernel_buffers.h"

namespace py = pybind11;

namespace mfagen::python {
namespace {

void require_dtype(const MpsTensor& t, session::HostDType wanted, const char* why) {
  if (t.dtype != wanted)
    throw py::type_error(fmt::format("{}: dtype {}; expected {} ({})", t.name, session::to_string(t.dtype),
                                     session::to_string(wanted), why));
}

}  // namespace

std::array<uint64_t, 4> mask_strides(const MpsTensor& mask, const spec::KernelSpec& kernel,
                                     const AttentionShape& shape) {
  const bool additive = kernel.mask != spec::MaskKind::boolean;
  require_dtype(mask, additive ? session::host_dtype_of(kernel.dtype) : session::HostDType::boolean,
                additive ? "an additive mask has the kernel's dtype" : "the kernel takes a bool mask");
  // Bound in place; its values are checked on the device (mfagen/_mps.py), never read here.
  return session::mask_broadcast_strides(mask.layout(), shape);
}

bool alibi_per_batch(const MpsTensor& slopes, const AttentionShape& shape) {
  require_dtype(slopes, session::HostDType::float32, "one slope per q head");
  const bool per_batch = slopes.shape == std::vector<uint64_t>{shape.batch, shape.heads_q};
  if (!per_batch && slopes.shape != std::vector<uint64_t>{shape.heads_q})
    throw session::CallError(fmt::format("{}: shape {}; expected ({},) or ({}, {})", slopes.name,
                                         io::shape_repr(slopes.shape), shape.heads_q, shape.batch, shape.heads_q));
  require_in_place(slopes, true);
  return per_batch;
}

void check_sinks(const MpsTensor& sinks, const AttentionShape& shape) {
  require_dtype(sinks, session::HostDType::float32, "one logit per q head");
  if (sinks.shape != std::vector<uint64_t>{shape.heads_q})
    throw session::CallError(fmt::format("{}: shape {}; expected ({},), one logit per q head", sinks.name,
                                         io::shape_repr(sinks.shape), shape.heads_q));
  require_in_place(sinks, true);
}

session::SequenceSizes packed_sizes(const MpsTensor& cu_seqlens_q, const MpsTensor& cu_seqlens_k, int64_t max_seqlen_q,
                                    int64_t max_seqlen_k) {
  for (const MpsTensor* cu : {&cu_seqlens_q, &cu_seqlens_k}) {
    require_dtype(*cu, session::HostDType::int32, "batch + 1 row offsets");
    if (cu->shape.size() != 1 || cu->shape[0] < 2 || cu->shape != cu_seqlens_q.shape)
      throw session::CallError(fmt::format("{}: shape {}; expected (batch + 1,) offsets, batch >= 1, as many for "
                                           "cu_seqlens_q and cu_seqlens_k", cu->name, io::shape_repr(cu->shape)));
    require_in_place(*cu, true);
  }
  for (const auto& [name, longest] : {std::pair{"max_seqlen_q", max_seqlen_q}, std::pair{"max_seqlen_k", max_seqlen_k}})
    if (longest < 1)
      throw session::CallError(fmt::format("{}: {}; on MPS the longest sequence is given, not read from cu_seqlens: "
                                           "expected an int >= 1",
                                           name, longest));
  return {cu_seqlens_q.shape[0] - 1, uint64_t(max_seqlen_q), uint64_t(max_seqlen_k), 0};
}

}  // namespace mfagen::python
