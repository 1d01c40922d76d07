// NOT BUILT OR RUN where mfagen is developed (no Apple GPU); see the header.
#define NS_PRIVATE_IMPLEMENTATION
#define MTL_PRIVATE_IMPLEMENTATION
#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "mfagen/metal_backend.h"

namespace mfagen {
namespace {

NS::String* ns_string(const std::string& s) { return NS::String::string(s.c_str(), NS::UTF8StringEncoding); }

std::string describe(NS::Error* error) {
  return error ? error->localizedDescription()->utf8String() : std::string("unknown error");
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ManifestError("cannot read kernel file " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Owns one reference to an Objective-C object: released at scope exit,
// moved (never copied) in containers.
template <class T>
struct Released {
  T* object = nullptr;
  explicit Released(T* o) : object(o) {}
  Released(Released&& other) noexcept : object(std::exchange(other.object, nullptr)) {}
  Released(const Released&) = delete;
  Released& operator=(const Released&) = delete;
  Released& operator=(Released&&) = delete;
  ~Released() {
    if (object) object->release();
  }
};

}  // namespace

MetalBackend::MetalBackend(MTL::Device* device) : device_(device ? device->retain() : MTL::CreateSystemDefaultDevice()) {
  if (!device_) throw std::runtime_error("metal backend: no Metal device");
  queue_ = device_->newCommandQueue();
}

MetalBackend::~MetalBackend() {
  for (auto& [key, p] : pipelines_) p->release();
  for (auto& [key, l] : libraries_) l->release();
  queue_->release();
  device_->release();
}

MTL::Library* MetalBackend::library_for(const Library& library, const KernelEntry& kernel) {
  const std::string key = kernel.file + "#" + kernel.hash;
  if (auto it = libraries_.find(key); it != libraries_.end()) return it->second;
  NS::Error* error = nullptr;
  MTL::Library* lib = nullptr;
  std::filesystem::path metallib = library.directory() / kernel.file;
  metallib.replace_extension(".metallib");
  if (std::filesystem::exists(metallib)) {
    // Built by `xcrun metal` / `xcrun metallib` (cmake/ mfagen_add_kernels on Apple).
    lib = device_->newLibrary(ns_string(metallib.string()), &error);
  } else {
    Released<MTL::CompileOptions> options(MTL::CompileOptions::alloc()->init());
    options.object->setFastMathEnabled(true);  // the kernels never feed inf or NaN into math (see the templates)
    options.object->setLanguageVersion(MTL::LanguageVersion3_1);  // bfloat
    const std::string source = read_text(library.directory() / kernel.file);
    lib = device_->newLibrary(ns_string(source), options.object, &error);
  }
  if (!lib) throw std::runtime_error("metal backend: cannot load " + kernel.file + ": " + describe(error));
  libraries_.emplace(key, lib);
  return lib;
}

MTL::ComputePipelineState* MetalBackend::pipeline_for(MTL::Library* library, const std::string& entry,
                                                      uint32_t threads) {
  const std::string key = std::to_string(reinterpret_cast<uintptr_t>(library)) + "#" + entry;
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  Released<MTL::Function> function(library->newFunction(ns_string(entry)));
  if (!function.object) throw std::runtime_error("metal backend: no kernel function " + entry);
  NS::Error* error = nullptr;
  MTL::ComputePipelineState* pipeline = device_->newComputePipelineState(function.object, &error);
  if (!pipeline) throw std::runtime_error("metal backend: pipeline for " + entry + ": " + describe(error));
  const NS::UInteger allowed = pipeline->maxTotalThreadsPerThreadgroup();
  if (allowed < threads) {
    pipeline->release();
    throw std::runtime_error("metal backend: " + entry + " allows " + std::to_string(allowed) +
                             " threads per threadgroup on this device; the plan needs " + std::to_string(threads));
  }
  pipelines_.emplace(key, pipeline);
  return pipeline;
}

RunStats MetalBackend::run_buffers(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
                                   const std::map<uint32_t, MTL::Buffer*>& buffers) {
  Released<NS::AutoreleasePool> pool(NS::AutoreleasePool::alloc()->init());
  std::vector<MTL::ComputePipelineState*> pipelines;
  {
    std::lock_guard lock(mutex_);
    MTL::Library* lib = library_for(library, kernel);
    for (const KernelLaunch& l : plan.launches)
      pipelines.push_back(pipeline_for(lib, l.entry, l.threads_per_threadgroup[0]));
  }
  // Scratch buffers (decode partials, backward D) live on the GPU only.
  std::map<uint32_t, MTL::Buffer*> bound = buffers;
  std::vector<Released<MTL::Buffer>> scratch;
  for (const BufferRequirement& b : plan.buffers) {
    if (b.index == kForwardParams) continue;  // set inline with setBytes
    if (b.scratch) {
      scratch.emplace_back(device_->newBuffer(b.bytes, MTL::ResourceStorageModePrivate));
      bound[b.index] = scratch.back().object;
    } else if (!bound.count(b.index) || bound.at(b.index)->length() < b.bytes) {
      throw std::invalid_argument("metal backend: buffer " + std::to_string(b.index) + " (" + b.name +
                                  ") is missing or smaller than " + std::to_string(b.bytes) + " bytes");
    }
  }
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* encoder = commands->computeCommandEncoder();
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const KernelLaunch& l = plan.launches[i];
    if (i > 0) encoder->memoryBarrier(MTL::BarrierScopeBuffers);  // each launch reads what the previous wrote
    encoder->setComputePipelineState(pipelines[i]);
    for (uint32_t index : l.buffers) {
      if (index == kForwardParams)
        encoder->setBytes(plan.params.data(), plan.params.size(), index);
      else
        encoder->setBuffer(bound.at(index), 0, index);
    }
    encoder->dispatchThreadgroups(MTL::Size(l.threadgroups[0], l.threadgroups[1], l.threadgroups[2]),
                                  MTL::Size(l.threads_per_threadgroup[0], l.threads_per_threadgroup[1],
                                            l.threads_per_threadgroup[2]));
  }
  encoder->endEncoding();
  commands->commit();
  commands->waitUntilCompleted();
  if (commands->status() == MTL::CommandBufferStatusError)
    throw std::runtime_error("metal backend: " + kernel.name + ": " + describe(commands->error()));
  RunStats stats;
  stats.seconds = commands->GPUEndTime() - commands->GPUStartTime();
  return stats;
}

RunStats MetalBackend::run(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
                           const TensorMap& tensors) {
  Released<NS::AutoreleasePool> pool(NS::AutoreleasePool::alloc()->init());
  std::map<uint32_t, MTL::Buffer*> buffers;
  std::vector<Released<MTL::Buffer>> owned;
  for (const auto& [index, bytes] : tensors) {
    owned.emplace_back(device_->newBuffer(bytes.data(), bytes.size(), MTL::ResourceStorageModeShared));
    buffers[index] = owned.back().object;
  }
  const RunStats stats = run_buffers(library, kernel, plan, buffers);
  for (const BufferRequirement& b : plan.buffers)
    if (b.written && !b.scratch)
      std::memcpy(tensors.at(b.index).data(), buffers.at(b.index)->contents(), tensors.at(b.index).size());
  return stats;
}

}  // namespace mfagen
