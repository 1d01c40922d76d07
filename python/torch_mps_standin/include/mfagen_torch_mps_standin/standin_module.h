// mfagen._mfagen.mps_standin: what tests need to play PyTorch's part around
// the MPS bridge where there is no MPS device: buffers of the stand-in
// device to serve as MPS tensors' storages, the stream's synchronize (as
// torch.mps.synchronize), and the stand-in's counters.
#pragma once

#include <pybind11/pybind11.h>

namespace mfagen::torch_mps_standin {

void add_module(pybind11::module_& parent);

}  // namespace mfagen::torch_mps_standin
