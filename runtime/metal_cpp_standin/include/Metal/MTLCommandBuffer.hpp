// Stand-in for metal-cpp's MTL::CommandQueue and MTL::CommandBuffer. commit()
// runs the recorded dispatches on the cpu backend, in encoding order, before
// it returns; the GPU times are the host times of that execution (emulation,
// not a GPU measurement). A command buffer with findings ends with status
// CommandBufferStatusError and an error() listing them.
#pragma once

#include <Metal/MTLCommandEncoder.hpp>
#include <Metal/MTLTypes.hpp>

namespace MTL {

class Device;
class CommandQueue;

class CommandBuffer : public NS::Referencing<CommandBuffer> {
 public:
  ComputeCommandEncoder* computeCommandEncoder();
  ComputeCommandEncoder* computeCommandEncoder(MTL::DispatchType dispatchType);
  void commit();
  void waitUntilCompleted();
  MTL::CommandBufferStatus status() const;
  NS::Error* error() const;
  NS::TimeInterval GPUStartTime() const;
  NS::TimeInterval GPUEndTime() const;
  Device* device() const;
  CommandQueue* commandQueue() const;

 protected:
  CommandBuffer() = default;
};

class CommandQueue : public NS::Referencing<CommandQueue> {
 public:
  CommandBuffer* commandBuffer();
  Device* device() const;

 protected:
  CommandQueue() = default;
};

}  // namespace MTL
