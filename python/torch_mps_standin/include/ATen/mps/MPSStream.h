// Stand-in of PyTorch's ATen/mps/MPSStream.h, the part the MPS bridge uses
// (python/bindings/mps_*): the current stream, its serial dispatch queue, its
// command buffer and the compute encoder PyTorch's own MPS kernels encode
// into, and the device. Names and C++ types follow PyTorch 2.x's header as
// seen from C++ (not Objective-C++): Metal objects are void* there, which are
// metal-cpp's MTL:: pointers. Here they are runtime/metal_cpp_standin's
// objects, so the dispatches run on the cpu backend when the stream commits.
//
// As on PyTorch's stream, commandEncoder() returns the one open encoder of
// the current command buffer (serial dispatch), created on first use, and
// nothing commits it but synchronize(): the owner of the stream (PyTorch; in
// tests, mfagen_torch_mps_standin::synchronize from Python) commits.
#pragma once

#include <dispatch/dispatch.h>

#include <cstdint>

typedef void* MPSCommandBuffer_t;
typedef void* MTLCommandQueue_t;
typedef void* MTLComputeCommandEncoder_t;
typedef void* MTLDevice_t;
typedef void* MTLBuffer_t;

namespace at::mps {

enum class SyncType {
  NONE,                 // no commit to command buffer
  COMMIT,               // commit and flush the command buffer
  COMMIT_AND_WAIT,      // flush and wait for command buffer execution to finish
  COMMIT_AND_CONTINUE,  // commit and continue with a new underlying command buffer
  COMMIT_ADAPTIVE,      // commit adaptively based on available memory
};

class MPSStream {
 public:
  MPSStream();
  ~MPSStream();
  MPSStream(const MPSStream&) = delete;
  MPSStream& operator=(const MPSStream&) = delete;

  MTLCommandQueue_t commandQueue() const { return queue_; }
  dispatch_queue_t queue() const { return serial_queue_; }
  MPSCommandBuffer_t commandBuffer();
  MTLComputeCommandEncoder_t commandEncoder();
  void endKernelCoalescing();
  void synchronize(SyncType sync_type);
  MTLDevice_t device() const { return device_; }

 private:
  MTLDevice_t device_ = nullptr;
  MTLCommandQueue_t queue_ = nullptr;
  MPSCommandBuffer_t command_buffer_ = nullptr;
  MTLComputeCommandEncoder_t encoder_ = nullptr;
  dispatch_queue_t serial_queue_ = nullptr;
};

MPSStream* getCurrentMPSStream();
MPSStream* getDefaultMPSStream();

}  // namespace at::mps
