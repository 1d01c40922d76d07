// A tensor the caller holds in host memory, described rather than copied:
// its element type, shape, strides and a pointer to its first element (the
// view's, storage offsets already applied). `mfagen run` gives .npy contents
// this way, the Python bindings give torch tensors; the attention call
// (session/attention_call.h) reads them in place when their element type is
// the kernel's and converts them otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spec/kernel_spec.h"

namespace mfagen::session {

enum class HostDType { float16, bfloat16, float32, float64, boolean, int32, uint8 };

const char* to_string(HostDType type);
size_t element_bytes(HostDType type);
bool is_floating(HostDType type);
HostDType host_dtype_of(spec::DType type);

struct HostTensor {
  std::string name;  // how errors name it: "q", "--q q.npy"
  HostDType dtype = HostDType::float32;
  std::vector<uint64_t> shape;
  std::vector<int64_t> strides;  // in elements, one per dimension; empty: C-contiguous
  const std::byte* data = nullptr;

  uint64_t elements() const;
  // The strides in use: `strides`, or the C-contiguous ones when empty.
  std::vector<int64_t> element_strides() const;
  // Bytes from the first element to the end of the last one (the span a kernel may read).
  uint64_t span_bytes() const;
  // Throws CallError naming the tensor unless its strides fit its shape, are
  // not negative and the last one is 1 (kernels read rows contiguously).
  void check_layout() const;
  // Element `index` (a multi-index over `shape`) widened to double.
  double value_at(const std::vector<uint64_t>& index) const;
};

// C-contiguous element strides of `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<uint64_t>& shape);

// The tensor's values in C order, rounded to `type` (round-to-nearest-even
// from each value) and encoded as kernel buffer bytes.
std::vector<std::byte> encode_as(const HostTensor& tensor, spec::DType type);

}  // namespace mfagen::session
