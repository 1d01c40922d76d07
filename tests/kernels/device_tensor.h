// BHSD tensors as kernel buffers and back, at any strides, in the kernel's
// element encoding (float32, float16 or bfloat16): what the kernel tests
// hand to generated kernels and read from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dtype_rounding.h"
#include "mfagen/forward_dispatch.h"

namespace mfagen::test {

// A device buffer holding a BHSD tensor at the kernel's strides, in the
// kernel's element encoding; `bytes` is exactly what the dispatch plan asks for.
std::vector<std::byte> device_tensor(const std::vector<double>& bhsd, uint64_t b, uint64_t h, uint64_t s, uint64_t d,
                                     const Strides3& st, reference::ElementType type, uint64_t bytes);

// The BHSD tensor a kernel wrote at strides `st`, widened to float.
std::vector<float> read_tensor(const std::vector<std::byte>& buf, uint64_t b, uint64_t h, uint64_t s, uint64_t d,
                               const Strides3& st, reference::ElementType type);

}  // namespace mfagen::test
