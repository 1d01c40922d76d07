// Stand-in for metal-cpp's MTL::Device: a device backed by the cpu backend.
#pragma once

#include <Metal/MTLCommandBuffer.hpp>
#include <Metal/MTLComputePipeline.hpp>
#include <Metal/MTLLibrary.hpp>
#include <Metal/MTLResource.hpp>
#include <Metal/MTLTypes.hpp>

namespace MTL {

class Device : public NS::Referencing<Device> {
 public:
  NS::String* name() const;
  MTL::Size maxThreadsPerThreadgroup() const;
  NS::UInteger maxThreadgroupMemoryLength() const;
  // Whether the device belongs to a GPU family (the stand-in's DeviceOptions
  // say which; by default an M5 on macOS 26: Apple1..Apple10, Metal3, Metal4).
  bool supportsFamily(MTL::GPUFamily gpuFamily);
  CommandQueue* newCommandQueue();
  // MSL source compiled by the cpu backend; nullptr and *error on a compile
  // error. Refused first, as Apple's compiler would: language version 4.0 on
  // a device without GPUFamilyMetal4, and sources including <metal_tensor>,
  // <metal_cooperative_tensor> or <MetalPerformancePrimitives/...> below
  // version 4.0 or on a device configured without TensorOps.
  Library* newLibrary(const NS::String* source, const CompileOptions* options, NS::Error** error);
  // A .metallib file. The stand-in cannot run AIR: it reports a missing file
  // or an unreadable one as Metal does, and any real metallib as unsupported.
  Library* newLibrary(const NS::String* filepath, NS::Error** error);
  ComputePipelineState* newComputePipelineState(const Function* function, NS::Error** error);
  Buffer* newBuffer(NS::UInteger length, MTL::ResourceOptions options);
  Buffer* newBuffer(const void* pointer, NS::UInteger length, MTL::ResourceOptions options);

 protected:
  Device() = default;
};

// The stand-in's default device (mfagen/metal_cpp_standin.h makes others).
Device* CreateSystemDefaultDevice();

}  // namespace MTL
