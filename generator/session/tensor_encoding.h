// Tensor values as kernels see them: .npy inputs (<f4, <f2, <f8) are rounded
// to the spec's element type (round-to-nearest-even, once, from the file's
// value) and encoded as the kernel's buffer bytes; outputs widen exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/npy.h"
#include "spec/kernel_spec.h"

namespace mfagen::session {

// x rounded to nearest-even into `type` (exact as a float). Overflow gives
// +-inf, NaN stays NaN.
float round_to_element(spec::DType type, double x);

// The values of a floating-point .npy array (<f4, <f2 or <f8) as doubles.
// Throws CallError for any other dtype, naming `what` (e.g. "--q q.npy").
std::vector<double> npy_values(const io::NpyArray& array, const char* what);

// Values (already representable in `type`) as kernel buffer bytes.
std::vector<std::byte> encode_elements(const std::vector<double>& values, spec::DType type);
// Kernel buffer bytes as float32 values (exact widening).
std::vector<float> decode_elements(const std::vector<std::byte>& bytes, spec::DType type);

}  // namespace mfagen::session
