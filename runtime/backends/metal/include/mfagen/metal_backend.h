// The Metal backend (DESIGN.md section 8), for Apple platforms. NOT BUILT OR
// RUN where mfagen is developed: there is no Apple GPU or Metal compiler
// there, so nothing in this folder has been executed; the cpu backend is the
// tested path. It loads a kernel's library (a precompiled <name>.metallib
// next to the manifest when present, else the vendored .metal source compiled
// at first use), caches pipeline states by entry point, and encodes a
// DispatchPlan's launches in order in one command buffer.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "mfagen/backend.h"

namespace MTL {
class Buffer;
class CommandQueue;
class ComputePipelineState;
class Device;
class Library;
}  // namespace MTL

namespace mfagen {

class MetalBackend final : public Backend {
 public:
  // nullptr: the system default device.
  explicit MetalBackend(MTL::Device* device = nullptr);
  ~MetalBackend() override;
  MetalBackend(const MetalBackend&) = delete;
  MetalBackend& operator=(const MetalBackend&) = delete;

  std::string_view name() const override { return "metal"; }
  // Copies the tensors into shared buffers, runs, copies written tensors back.
  RunStats run(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
               const TensorMap& tensors) override;
  // The zero-copy path for apps whose tensors already live in MTL::Buffers
  // (bound at offset 0, by buffer index).
  RunStats run_buffers(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
                       const std::map<uint32_t, MTL::Buffer*>& buffers);

 private:
  MTL::Library* library_for(const Library& library, const KernelEntry& kernel);
  MTL::ComputePipelineState* pipeline_for(MTL::Library* library, const std::string& entry, uint32_t threads);

  MTL::Device* device_;
  MTL::CommandQueue* queue_;
  std::mutex mutex_;  // guards the caches; encoding itself needs no lock
  std::unordered_map<std::string, MTL::Library*> libraries_;             // by kernel file + hash
  std::unordered_map<std::string, MTL::ComputePipelineState*> pipelines_;  // by entry point (+ library)
};

}  // namespace mfagen
