// Stand-in for metal-cpp's MTL::Resource and MTL::Buffer: host memory.
// Shared buffers expose their bytes through contents(); private ones return
// nullptr there, as on a GPU, and new buffers without initial data are filled
// with 0xFF bytes (NaN in every float type) because Metal does not zero them.
#pragma once

#include <Metal/MTLTypes.hpp>

namespace MTL {

class Device;

class Resource : public NS::Referencing<Resource> {
 public:
  MTL::StorageMode storageMode() const;
  NS::UInteger allocatedSize() const;
  Device* device() const;

 protected:
  Resource() = default;
};

class Buffer : public NS::Referencing<Buffer, Resource> {
 public:
  void* contents();
  NS::UInteger length() const;

 protected:
  Buffer() = default;
};

}  // namespace MTL
