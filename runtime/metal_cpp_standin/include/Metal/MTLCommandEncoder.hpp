// Stand-in for metal-cpp's MTL::CommandEncoder and ComputeCommandEncoder.
// The encoder records commands; the command buffer runs them at commit. What
// real Metal would reject or mishandle (an argument without a buffer, an
// index bound twice before one dispatch, too many threads, a missing
// threadgroup-memory length, a dispatch reading what an earlier dispatch of a
// concurrent encoder wrote with no barrier between) is recorded as a finding
// (mfagen/metal_cpp_standin.h) naming the call that caused it.
#pragma once

#include <Metal/MTLResource.hpp>
#include <Metal/MTLTypes.hpp>

namespace MTL {

class ComputePipelineState;
class Device;

class CommandEncoder : public NS::Referencing<CommandEncoder> {
 public:
  void endEncoding();
  Device* device() const;

 protected:
  CommandEncoder() = default;
};

class ComputeCommandEncoder : public NS::Referencing<ComputeCommandEncoder, CommandEncoder> {
 public:
  MTL::DispatchType dispatchType() const;
  void setComputePipelineState(const ComputePipelineState* state);
  void setBytes(const void* bytes, NS::UInteger length, NS::UInteger index);
  void setBuffer(const Buffer* buffer, NS::UInteger offset, NS::UInteger index);
  void setThreadgroupMemoryLength(NS::UInteger length, NS::UInteger index);
  void dispatchThreadgroups(MTL::Size threadgroupsPerGrid, MTL::Size threadsPerThreadgroup);
  void memoryBarrier(MTL::BarrierScope scope);
  void memoryBarrier(Resource* resources[], NS::UInteger count);

 protected:
  ComputeCommandEncoder() = default;
};

}  // namespace MTL
