// The stand-in "MPS device" of tests: one metal-cpp stand-in device shared
// by the stream (ATen/mps/MPSStream.h here) and the buffers that serve as
// MPS tensors' storages, each registered by the address of its contents so
// that THPVariable_Unpack can find the MTL::Buffer of a tensor's storage.
#pragma once

#include <Metal/Metal.hpp>

#include <cstddef>

namespace mfagen::torch_mps_standin {

// The device (created on first use, never released).
MTL::Device* device();
// A new shared buffer of `bytes` (at least 1), every byte 0xFF (NaN in every
// float format: what a kernel did not write stands out), registered. Owned:
// release it with release_buffer.
MTL::Buffer* new_buffer(size_t bytes);
void release_buffer(MTL::Buffer* buffer);
// The registered buffer whose contents start at `contents`, or nullptr.
MTL::Buffer* buffer_at(const void* contents);

}  // namespace mfagen::torch_mps_standin
