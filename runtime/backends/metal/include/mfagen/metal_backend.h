// The Metal backend (DESIGN.md section 8). On Apple platforms it builds
// against Apple's metal-cpp and runs on the GPU; that path has not been run
// where mfagen is developed (no Apple GPU there). Elsewhere the same code
// builds against the metal-cpp stand-in (runtime/metal_cpp_standin), which
// runs every dispatch on the cpu backend and reports what Metal would reject;
// tests/metal runs it there. It loads a kernel's library (a precompiled
// <name>.metallib next to the manifest when present, else the vendored .metal
// source compiled at first use), caches pipeline states by entry point +
// function constant values, and encodes a plan's launches in order with a
// buffer barrier between dependent launches.
//
// capabilities() says what the device offers selection (Metal version, Apple
// GPU family, TensorOps), detected as shipped peers do: TensorOps need GPU
// family Metal4 and a probe kernel using mpp::tensor_ops::matmul2d that
// compiles and builds a pipeline (llama.cpp's has_tensor; MLX additionally
// gates its NAX kernels on GPU generation 17+, which the TensorOps kernels'
// own requirement, family apple10, matches). MFAGEN_METAL_TENSOR_OPS=0 turns
// them off. Kernels whose manifest "requires" the device does not satisfy
// are refused before compiling; TensorOps kernels compile as Metal 4.0, the
// others as 3.1.
//
// Two ways to use it:
//  - run(): the Backend interface; copies tensors into shared buffers,
//    allocates scratch buffers, commits and waits (tests, tools, examples);
//  - prepare() once, then encode() per call into the app's own command
//    encoder with the app's MTL::Buffers: no allocation, no lock, no copy.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "mfagen/backend.h"

namespace MTL {
class Buffer;
class CommandQueue;
class ComputeCommandEncoder;
class ComputePipelineState;
class Device;
class Library;
}  // namespace MTL

namespace mfagen {

class MetalBackend final : public Backend {
 public:
  // The MSL of a kernel whose library has no directory (an in-memory
  // session::SpecLibrary, as the Python package's JIT kernels): the backend
  // then compiles that text instead of reading library.directory()/file.
  using SourceProvider = std::function<std::string(const Library&, const KernelEntry&)>;

  // nullptr: the system default device.
  explicit MetalBackend(MTL::Device* device = nullptr, SourceProvider sources = nullptr);
  ~MetalBackend() override;
  MetalBackend(const MetalBackend&) = delete;
  MetalBackend& operator=(const MetalBackend&) = delete;

  std::string_view name() const override { return "metal"; }
  bool measures_gpu_time() const override { return !MFAGEN_METAL_STANDIN; }
  MTL::Device* device() const { return device_; }
  // Detected at the first call (the TensorOps probe compiles a small kernel),
  // then a copy of the stored answer: no allocation, no lock.
  DeviceCapabilities capabilities() const override;
  // Why TensorOps are off (empty when on): no GPU family Metal4,
  // MFAGEN_METAL_TENSOR_OPS=0, or the probe's compile or pipeline error.
  const std::string& tensor_ops_diagnostic() const;
  // The probe: a kernel whose matmul2d over half operands into a float
  // destination every TensorOps kernel mfagen generates relies on.
  static const char* tensor_ops_probe_source();

  // Copies the tensors into shared buffers, runs, copies written tensors back.
  RunStats run(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
               const TensorMap& tensors) override;
  RunStats run(const Library& library, const KernelEntry& kernel, const LaunchPlan& plan,
               const TensorMap& tensors) override;
  // For apps whose tensors already live in MTL::Buffers (bound at offset 0,
  // by buffer index); scratch buffers are allocated per call.
  RunStats run_buffers(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
                       const std::map<uint32_t, MTL::Buffer*>& buffers);

  // Builds the pipelines of every kernel of `library` now, so encode() finds
  // them without a lock. Not thread-safe with encode(): call it before
  // sharing the backend between threads. The library must outlive the backend's use of it.
  void prepare(const Library& library);
  // Encodes `plan`'s launches into `encoder` (a memory barrier between
  // launches, each reads what the previous wrote). `buffers[i]` is bound at
  // buffer index i for every index the plan lists except params (set inline
  // with setBytes), scratch buffers included: allocate those once at the
  // plan's sizes (StorageModePrivate) and reuse them. For prepared kernels
  // this allocates nothing and takes no lock; otherwise the first call builds
  // the pipelines under the cache lock.
  void encode(const Library& library, const KernelEntry& kernel, const LaunchPlan& plan,
              MTL::ComputeCommandEncoder* encoder, std::span<MTL::Buffer* const> buffers);
  // The same with buffer i bound at byte offset `offsets[i]` (empty: all 0),
  // for tensors that start inside a larger buffer (PyTorch's MPS tensors: the
  // storage's MTLBuffer at storage_offset * element_size); each buffer must
  // hold the plan's bytes past its offset.
  void encode(const Library& library, const KernelEntry& kernel, const LaunchPlan& plan,
              MTL::ComputeCommandEncoder* encoder, std::span<MTL::Buffer* const> buffers,
              std::span<const uint64_t> offsets);

 private:
  using Pipelines = std::array<MTL::ComputePipelineState*, LaunchPlan::kMaxLaunches>;  // by launch, in order
  MTL::Library* library_for(const Library& library, const KernelEntry& kernel);          // caller holds mutex_
  MTL::ComputePipelineState* pipeline_for(MTL::Library* library, const KernelEntry& kernel, const std::string& entry,
                                          uint32_t threads);                              // caller holds mutex_
  Pipelines build_pipelines(const Library& library, const KernelEntry& kernel);           // caller holds mutex_
  Pipelines pipelines(const Library& library, const KernelEntry& kernel);

  void detect_capabilities() const;

  MTL::Device* device_;
  SourceProvider sources_;
  MTL::CommandQueue* queue_;
  mutable std::once_flag capabilities_once_;
  mutable DeviceCapabilities capabilities_;
  mutable std::string tensor_ops_diagnostic_;
  std::mutex mutex_;  // guards the caches below; prepared kernels are read without it
  std::unordered_map<std::string, MTL::Library*> libraries_;               // by kernel file + hash
  std::unordered_map<std::string, MTL::ComputePipelineState*> pipelines_;  // by library + entry + constant values
  std::unordered_map<const KernelEntry*, Pipelines> prepared_;              // written by prepare() only
};

}  // namespace mfagen
