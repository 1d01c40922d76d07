// MTL::Device, its buffers and the stand-in's device options and counters.
#include <algorithm>
#include <cstring>

#include "objects.h"

namespace mfagen::metal_standin {

DeviceImpl::DeviceImpl(DeviceOptions o) : options(std::move(o)), device_name(new StringImpl(options.name)) {}

MTL::Device* create_device(const DeviceOptions& options) { return new DeviceImpl(options); }

std::vector<MTL::GPUFamily> families_of(int apple, bool metal4) {
  std::vector<MTL::GPUFamily> families;
  for (int f = 1; f <= apple; ++f) families.push_back(MTL::GPUFamily(MTL::GPUFamilyApple1 + f - 1));
  families.insert(families.end(), {MTL::GPUFamilyMac2, MTL::GPUFamilyCommon1, MTL::GPUFamilyCommon2,
                                   MTL::GPUFamilyCommon3});
  if (apple >= 7) families.push_back(MTL::GPUFamilyMetal3);
  if (metal4) families.push_back(MTL::GPUFamilyMetal4);
  return families;
}

bool supports_family(const DeviceOptions& options, MTL::GPUFamily family) {
  return std::find(options.gpu_families.begin(), options.gpu_families.end(), family) != options.gpu_families.end();
}

DeviceCounters counters(const MTL::Device* device) {
  const DeviceImpl* d = impl<DeviceImpl>(device);
  return {d->libraries_compiled.load(), d->pipelines_built.load(), d->dispatches_run.load(),
          d->command_buffers_committed.load()};
}

namespace {

MTL::StorageMode storage_mode(MTL::ResourceOptions options) {
  return MTL::StorageMode((options >> MTL::ResourceStorageModeShift) & 0xf);
}

BufferImpl* new_buffer(MTL::Device* device, NS::UInteger length, MTL::ResourceOptions options) {
  auto* buffer = new BufferImpl;
  buffer->owner = Owned<MTL::Device>::retained(device);
  buffer->mode = storage_mode(options);
  // Metal does not zero new buffers: NaN bytes make a kernel that reads
  // before writing visible in its results.
  buffer->bytes.assign(length, std::byte{0xff});
  return buffer;
}

}  // namespace
}  // namespace mfagen::metal_standin

namespace MTL {

using namespace mfagen::metal_standin;

NS::String* Device::name() const { return impl<DeviceImpl>(this)->device_name.get(); }
Size Device::maxThreadsPerThreadgroup() const {
  return Size(impl<DeviceImpl>(this)->options.max_threads_per_threadgroup, 1024, 1024);
}
NS::UInteger Device::maxThreadgroupMemoryLength() const {
  return impl<DeviceImpl>(this)->options.max_threadgroup_memory_length;
}
bool Device::supportsFamily(GPUFamily gpuFamily) { return supports_family(impl<DeviceImpl>(this)->options, gpuFamily); }

CommandQueue* Device::newCommandQueue() {
  auto* queue = new QueueImpl;
  queue->owner = Owned<Device>::retained(this);
  return queue;
}

Buffer* Device::newBuffer(NS::UInteger length, ResourceOptions options) { return new_buffer(this, length, options); }

Buffer* Device::newBuffer(const void* pointer, NS::UInteger length, ResourceOptions options) {
  BufferImpl* buffer = new_buffer(this, length, options);
  if (pointer && length) std::memcpy(buffer->bytes.data(), pointer, length);
  return buffer;
}

Device* CreateSystemDefaultDevice() { return create_device(); }

StorageMode Resource::storageMode() const { return static_cast<const BufferImpl*>(this)->mode; }
NS::UInteger Resource::allocatedSize() const { return static_cast<const BufferImpl*>(this)->bytes.size(); }
Device* Resource::device() const { return static_cast<const BufferImpl*>(this)->owner.get(); }

void* Buffer::contents() {
  BufferImpl* self = impl<BufferImpl>(this);
  // The CPU cannot see private GPU memory.
  return self->mode == StorageModePrivate ? nullptr : self->bytes.data();
}
NS::UInteger Buffer::length() const { return impl<BufferImpl>(this)->bytes.size(); }

}  // namespace MTL
