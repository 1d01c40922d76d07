// A PyTorch MPS tensor as the Metal bridge binds it (DESIGN.md section 16):
// the MTLBuffer of its storage and the byte offset of its first element
// there, read with the calls PyTorch's own MPS extensions use
// (THPVariable_Unpack, storage().data() as the id<MTLBuffer>,
// storage_offset() * element_size()), plus its dtype, shape and strides.
// Nothing is copied and the data is never read on the host: on Apple
// silicon PyTorch's MPS storages are private GPU memory. Built against
// PyTorch's headers on macOS; elsewhere against python/torch_mps_standin.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "session/host_tensor.h"

namespace MTL {
class Buffer;
}

namespace mfagen::python {

struct MpsTensor {
  std::string name;  // the argument, as errors name it
  pybind11::object object;
  MTL::Buffer* buffer = nullptr;
  uint64_t offset = 0;  // bytes from the buffer's start to the first element
  session::HostDType dtype = session::HostDType::float32;
  std::vector<uint64_t> shape;
  std::vector<int64_t> strides;  // elements

  uint64_t span_bytes() const;  // from the first element to the end of the last
  // The layout for the session library's shape checks: no data (a non-null
  // marker the checks require and never read through).
  session::HostTensor layout() const;
};

// `object` as an MPS tensor named `name`: TypeError unless a torch.Tensor,
// ValueError unless on the MPS device (mixed devices), NotImplementedError
// for a dtype the kernels do not take.
MpsTensor mps_tensor(pybind11::handle object, const std::string& name);

// NotImplementedError naming the tensor unless its rows are contiguous and
// no two elements share memory (what a kernel reads in place and writes
// gradients with); `contiguous`: C-contiguous only (dO, out, lse).
void require_in_place(const MpsTensor& t, bool contiguous);

// Raises NotImplementedError(message) in Python (what mfagen does not serve: callers fall back).
[[noreturn]] void not_served(const std::string& message);

}  // namespace mfagen::python
