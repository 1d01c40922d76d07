#include "standin_buffers.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "mfagen/metal_cpp_standin.h"

namespace mfagen::torch_mps_standin {
namespace {

std::mutex registry_mutex;
std::unordered_map<const void*, MTL::Buffer*>& registry() {
  static auto* buffers = new std::unordered_map<const void*, MTL::Buffer*>();  // outlives interpreter shutdown
  return *buffers;
}

}  // namespace

MTL::Device* device() {
  static MTL::Device* shared = metal_standin::create_device();
  return shared;
}

MTL::Buffer* new_buffer(size_t bytes) {
  MTL::Buffer* buffer = device()->newBuffer(bytes ? bytes : 1, MTL::ResourceStorageModeShared);
  std::memset(buffer->contents(), 0xFF, buffer->length());
  std::lock_guard lock(registry_mutex);
  registry()[buffer->contents()] = buffer;
  return buffer;
}

void release_buffer(MTL::Buffer* buffer) {
  {
    std::lock_guard lock(registry_mutex);
    registry().erase(buffer->contents());
  }
  buffer->release();  // a command buffer that bound it holds its own reference until it ran
}

MTL::Buffer* buffer_at(const void* contents) {
  std::lock_guard lock(registry_mutex);
  auto it = registry().find(contents);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace mfagen::torch_mps_standin
