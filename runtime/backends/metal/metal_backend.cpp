// Written against metal-cpp (Apple's C++ interface to Metal, macOS 13+ /
// iOS 16+); built here against runtime/metal_cpp_standin (see the header).
#define NS_PRIVATE_IMPLEMENTATION
#define MTL_PRIVATE_IMPLEMENTATION
#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "mfagen/call_trace.h"
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

MTL::DataType data_type(const FunctionConstant& c) {
  if (c.type == "bool") return MTL::DataTypeBool;
  if (c.type == "char") return MTL::DataTypeChar;
  if (c.type == "uchar") return MTL::DataTypeUChar;
  if (c.type == "short") return MTL::DataTypeShort;
  if (c.type == "ushort") return MTL::DataTypeUShort;
  if (c.type == "int") return MTL::DataTypeInt;
  if (c.type == "uint") return MTL::DataTypeUInt;
  if (c.type == "half") return MTL::DataTypeHalf;
  if (c.type == "float") return MTL::DataTypeFloat;
  throw std::invalid_argument("metal backend: function constant " + c.name + " has unsupported type " + c.type);
}

// The part of a pipeline's cache key that the function constants make:
// index, type and value bytes of each constant that has a value.
std::string constants_key(const KernelEntry& kernel) {
  std::string key;
  for (const FunctionConstant& c : kernel.function_constants) {
    if (!c.has_value) continue;
    key.append("|").append(std::to_string(c.index)).append(":").append(c.type).append("=");
    for (uint32_t i = 0; i < c.value_bytes; ++i) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", unsigned(c.value[i]));
      key += hex;
    }
  }
  return key;
}

// Apple's values of the enums Metal 4 added (MTLGPUFamilyMetal4,
// MTLGPUFamilyApple10, MTLLanguageVersion4_0), spelled as numbers so that the
// backend also builds against metal-cpp from before the macOS 26 SDK (as
// llama.cpp's ggml-metal-device.m does for MTLGPUFamilyMetal4).
constexpr MTL::GPUFamily kGpuFamilyMetal4 = MTL::GPUFamily(5002);
constexpr NS::Integer kGpuFamilyApple7 = 1007;
constexpr MTL::LanguageVersion kLanguageVersion4_0 = MTL::LanguageVersion((4 << 16) + 0);
#if MFAGEN_METAL_STANDIN
static_assert(kGpuFamilyMetal4 == MTL::GPUFamilyMetal4 && kGpuFamilyApple7 == MTL::GPUFamilyApple7 &&
              kLanguageVersion4_0 == MTL::LanguageVersion4_0);
#endif

// The Metal language version a kernel is compiled as: 4.0 for TensorOps
// (MetalPerformancePrimitives), else 3.1 (bfloat), as its manifest requires.
MTL::LanguageVersion language_version(const KernelEntry& kernel) {
  return kernel.requirements.metal >= MetalVersion::v4_0 ? kLanguageVersion4_0 : MTL::LanguageVersion3_1;
}

std::string describe(const DeviceCapabilities& d) {
  return "Metal " + std::string(to_string(d.metal)) + ", GPU family " + std::string(to_string(d.gpu_family)) +
         (d.tensor_ops ? ", TensorOps" : ", no TensorOps");
}

// The launch a plan's entry belongs to: index into the kernel's entries.
size_t launch_index(const KernelEntry& kernel, std::string_view entry) {
  for (size_t i = 0; i < kernel.entries.size(); ++i)
    if (kernel.entries[i] == entry) return i;
  throw std::invalid_argument("metal backend: " + std::string(entry) + " is not a kernel function of " + kernel.name);
}

}  // namespace

MetalBackend::MetalBackend(MTL::Device* device, SourceProvider sources)
    : device_(device ? device->retain() : MTL::CreateSystemDefaultDevice()), sources_(std::move(sources)) {
  if (!device_) throw std::runtime_error("metal backend: no Metal device");
  queue_ = device_->newCommandQueue();
  if (!queue_) throw std::runtime_error("metal backend: cannot create a command queue");
}

const char* MetalBackend::tensor_ops_probe_source() {
  // What mfagen's TensorOps kernels use (templates/attention_forward_tensor_ops):
  // tensor_inline views of device memory, a matmul2d run by one simdgroup
  // into a float32 cooperative tensor, stored back.
  return R"(#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

kernel void mfagen_tensor_ops_probe(device half* a [[buffer(0)]], device half* b [[buffer(1)]],
                                    device float* c [[buffer(2)]]) {
  typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> Operand;
  Operand left(a, dextents<int32_t, 2>(16, 16));
  Operand right(b, dextents<int32_t, 2>(16, 16));
  tensor<device float, dextents<int32_t, 2>, tensor_inline> out(c, dextents<int32_t, 2>(16, 16));
  constexpr auto desc = matmul2d_descriptor(16, 16, 16);
  matmul2d<desc, execution_simdgroup> op;
  auto product = op.get_destination_cooperative_tensor<Operand, Operand, float>();
  for (ushort i = 0; i < product.get_capacity(); ++i)
    if (product.is_valid_element(i)) product[i] = 0;
  op.run(left, right, product);
  product.store(out);
}
)";
}

namespace {

// The facts supportsFamily() answers (no compile): the highest Apple family
// of the device and Metal 4 from GPUFamilyMetal4; TensorOps still off.
DeviceCapabilities family_capabilities(MTL::Device* device) {
  DeviceCapabilities c;
  c.gpu_family = GpuFamily::none;
  for (GpuFamily f : {GpuFamily::apple7, GpuFamily::apple8, GpuFamily::apple9, GpuFamily::apple10})
    if (device->supportsFamily(MTL::GPUFamily(kGpuFamilyApple7 + (int(f) - 7)))) c.gpu_family = f;
  // 3.1 otherwise: what the other kernels are compiled as (macOS 14 and later).
  c.metal = device->supportsFamily(kGpuFamilyMetal4) ? MetalVersion::v4_0 : MetalVersion::v3_1;
  return c;
}

}  // namespace

// TensorOps as shipped peers decide them: when the device supports GPU family
// Metal4, a probe using matmul2d must compile and build a pipeline
// (ggml-metal-device.m does the same before it sets has_tensor).
void MetalBackend::detect_capabilities() const {
  DeviceCapabilities c = family_capabilities(device_);
  const bool metal4 = c.metal >= MetalVersion::v4_0;
  const char* setting = std::getenv("MFAGEN_METAL_TENSOR_OPS");
  if (!metal4) {
    tensor_ops_diagnostic_ = "the device does not support GPU family Metal4";
  } else if (setting && std::string_view(setting) == "0") {
    tensor_ops_diagnostic_ = "turned off by MFAGEN_METAL_TENSOR_OPS=0";
  } else {
    Released<NS::AutoreleasePool> pool(NS::AutoreleasePool::alloc()->init());
    Released<MTL::CompileOptions> options(MTL::CompileOptions::alloc()->init());
    options.object->setLanguageVersion(kLanguageVersion4_0);
    NS::Error* error = nullptr;
    Released<MTL::Library> library(device_->newLibrary(ns_string(tensor_ops_probe_source()), options.object, &error));
    if (!library.object) {
      tensor_ops_diagnostic_ = "the TensorOps probe does not compile: " + describe(error);
    } else {
      Released<MTL::Function> function(library.object->newFunction(ns_string("mfagen_tensor_ops_probe")));
      Released<MTL::ComputePipelineState> pipeline(
          function.object ? device_->newComputePipelineState(function.object, &error) : nullptr);
      if (!pipeline.object)
        tensor_ops_diagnostic_ = "the TensorOps probe builds no pipeline: " + describe(error);
      else
        c.tensor_ops = true;
    }
  }
  capabilities_ = c;
}

DeviceCapabilities MetalBackend::capabilities() const {
  std::call_once(capabilities_once_, [this] { detect_capabilities(); });
  return capabilities_;
}

const std::string& MetalBackend::tensor_ops_diagnostic() const {
  capabilities();
  return tensor_ops_diagnostic_;
}

MetalBackend::~MetalBackend() {
  for (auto& [key, p] : pipelines_) p->release();
  for (auto& [key, l] : libraries_) l->release();
  queue_->release();
  device_->release();
}

MTL::Library* MetalBackend::library_for(const Library& library, const KernelEntry& kernel) {
  const std::string key = (library.directory() / kernel.file).string() + "#" + kernel.hash;
  if (auto it = libraries_.find(key); it != libraries_.end()) return it->second;
  // Only a TensorOps kernel needs the TensorOps probe; the others are checked
  // against what supportsFamily() says.
  const DeviceCapabilities device = kernel.requirements.tensor_ops ? capabilities() : family_capabilities(device_);
  if (!device.satisfies(kernel.requirements))
    throw std::runtime_error("metal backend: " + kernel.name + " requires Metal " +
                             std::string(to_string(kernel.requirements.metal)) + ", GPU family " +
                             std::string(to_string(kernel.requirements.gpu_family)) +
                             (kernel.requirements.tensor_ops ? " and TensorOps" : "") + "; this device offers " +
                             describe(device) +
                             (kernel.requirements.tensor_ops && !device.tensor_ops ? " (" + tensor_ops_diagnostic_ + ")"
                                                                                     : "") +
                             "; select with library.select(query, backend.capabilities())");
  NS::Error* error = nullptr;
  MTL::Library* lib = nullptr;
  std::filesystem::path metallib = library.directory() / kernel.file;
  metallib.replace_extension(".metallib");
  if (std::filesystem::exists(metallib)) {
    // Built by `xcrun metal` + `xcrun metallib` (cmake: mfagen_add_kernels(... METALLIB ...) on Apple).
    lib = device_->newLibrary(ns_string(metallib.string()), &error);
  } else {
    Released<MTL::CompileOptions> options(MTL::CompileOptions::alloc()->init());
    options.object->setFastMathEnabled(true);  // the kernels never feed inf or NaN into math (see the templates)
    options.object->setLanguageVersion(language_version(kernel));  // 3.1: bfloat; 4.0: TensorOps
    const std::string source = library.directory().empty() && sources_ ? sources_(library, kernel)
                                                                        : read_text(library.directory() / kernel.file);
    lib = device_->newLibrary(ns_string(source), options.object, &error);
  }
  if (!lib) throw std::runtime_error("metal backend: cannot load " + kernel.file + ": " + describe(error));
  libraries_.emplace(key, lib);
  return lib;
}

MTL::ComputePipelineState* MetalBackend::pipeline_for(MTL::Library* library, const KernelEntry& kernel,
                                                      const std::string& entry, uint32_t threads) {
  const std::string key = std::to_string(reinterpret_cast<uintptr_t>(library)) + "#" + entry + constants_key(kernel);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  NS::Error* error = nullptr;
  MTL::Function* raw_function = nullptr;
  bool has_values = false;
  for (const FunctionConstant& c : kernel.function_constants) has_values |= c.has_value;
  if (has_values) {
    Released<MTL::FunctionConstantValues> values(MTL::FunctionConstantValues::alloc()->init());
    for (const FunctionConstant& c : kernel.function_constants)
      if (c.has_value) values.object->setConstantValue(c.value.data(), data_type(c), c.index);
    raw_function = library->newFunction(ns_string(entry), values.object, &error);
  } else {
    raw_function = library->newFunction(ns_string(entry));
  }
  Released<MTL::Function> function(raw_function);
  if (!function.object)
    throw std::runtime_error("metal backend: no kernel function " + entry + (error ? ": " + describe(error) : ""));
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

// Every launch's pipeline, in the kernel's launch order. The threads each
// launch needs come from a plan of the smallest call (they do not depend on
// the shape).
MetalBackend::Pipelines MetalBackend::build_pipelines(const Library& library, const KernelEntry& kernel) {
  const std::vector<uint32_t> threads = Library::launch_threads(kernel);  // any kind and layout
  MTL::Library* lib = library_for(library, kernel);
  Pipelines result{};
  for (size_t i = 0; i < threads.size(); ++i) result[i] = pipeline_for(lib, kernel, kernel.entries[i], threads[i]);
  return result;
}

MetalBackend::Pipelines MetalBackend::pipelines(const Library& library, const KernelEntry& kernel) {
  if (auto it = prepared_.find(&kernel); it != prepared_.end()) return it->second;  // no lock: prepare() is done
  Released<NS::AutoreleasePool> pool(NS::AutoreleasePool::alloc()->init());
  std::lock_guard lock(mutex_);
  return build_pipelines(library, kernel);  // cached in pipelines_ after the first call
}

void MetalBackend::prepare(const Library& library) {
  Released<NS::AutoreleasePool> pool(NS::AutoreleasePool::alloc()->init());  // the names and errors made below
  std::lock_guard lock(mutex_);
  for (const KernelEntry& kernel : library.kernels()) prepared_[&kernel] = build_pipelines(library, kernel);
}

void MetalBackend::encode(const Library& library, const KernelEntry& kernel, const LaunchPlan& plan,
                          MTL::ComputeCommandEncoder* encoder, std::span<MTL::Buffer* const> buffers) {
  encode(library, kernel, plan, encoder, buffers, {});
}

void MetalBackend::encode(const Library& library, const KernelEntry& kernel, const LaunchPlan& plan,
                          MTL::ComputeCommandEncoder* encoder, std::span<MTL::Buffer* const> buffers,
                          std::span<const uint64_t> offsets) {
  const Pipelines ps = pipelines(library, kernel);
  trace_call(kernel, plan.shape, name());  // MFAGEN_TRACE; free when off
  const auto offset_of = [&](uint32_t index) { return index < offsets.size() ? offsets[index] : 0; };
  for (const LaunchPlan::Buffer& b : plan.buffers()) {
    if (b.index == kForwardParams) continue;
    if (b.index >= buffers.size() || !buffers[b.index] || buffers[b.index]->length() < offset_of(b.index) ||
        buffers[b.index]->length() - offset_of(b.index) < b.bytes)
      throw std::invalid_argument("metal backend: buffer " + std::to_string(b.index) + " (" + std::string(b.name) +
                                  ") is missing or smaller than " + std::to_string(b.bytes) + " bytes" +
                                  (offset_of(b.index) ? " past its offset " + std::to_string(offset_of(b.index)) : ""));
  }
  for (size_t i = 0; i < plan.launch_count; ++i) {
    const LaunchPlan::Launch& l = plan.launch_storage[i];
    if (i > 0) encoder->memoryBarrier(MTL::BarrierScopeBuffers);  // each launch reads what the previous wrote
    encoder->setComputePipelineState(ps[i]);
    for (uint32_t index = 0; index < 32; ++index) {
      if (!l.binds(index)) continue;
      if (index == kForwardParams)
        encoder->setBytes(plan.params_storage.data(), plan.params_size, index);
      else
        encoder->setBuffer(buffers[index], offset_of(index), index);
    }
    encoder->dispatchThreadgroups(MTL::Size(l.threadgroups[0], l.threadgroups[1], l.threadgroups[2]),
                                  MTL::Size(l.threads_per_threadgroup[0], l.threads_per_threadgroup[1],
                                            l.threads_per_threadgroup[2]));
  }
}

RunStats MetalBackend::run_buffers(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
                                   const std::map<uint32_t, MTL::Buffer*>& buffers) {
  Released<NS::AutoreleasePool> pool(NS::AutoreleasePool::alloc()->init());
  const Pipelines ps = pipelines(library, kernel);
  trace_call(kernel, plan.shape, name());
  // Scratch buffers (decode partials, backward D) live on the GPU only.
  std::map<uint32_t, MTL::Buffer*> bound = buffers;
  std::vector<Released<MTL::Buffer>> scratch;
  for (const BufferRequirement& b : plan.buffers) {
    if (b.index == kForwardParams) continue;  // set inline with setBytes
    if (b.scratch) {
      scratch.emplace_back(device_->newBuffer(std::max<uint64_t>(b.bytes, 1), MTL::ResourceStorageModePrivate));
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
    if (i > 0) encoder->memoryBarrier(MTL::BarrierScopeBuffers);
    encoder->setComputePipelineState(ps[launch_index(kernel, l.entry)]);
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
    owned.emplace_back(device_->newBuffer(bytes.data(), std::max<size_t>(bytes.size(), 1), MTL::ResourceStorageModeShared));
    buffers[index] = owned.back().object;
  }
  const RunStats stats = run_buffers(library, kernel, plan, buffers);
  for (const BufferRequirement& b : plan.buffers)
    if (b.written && !b.scratch)
      std::memcpy(tensors.at(b.index).data(), buffers.at(b.index)->contents(), tensors.at(b.index).size());
  return stats;
}

RunStats MetalBackend::run(const Library& library, const KernelEntry& kernel, const LaunchPlan& plan,
                           const TensorMap& tensors) {
  Released<NS::AutoreleasePool> pool(NS::AutoreleasePool::alloc()->init());
  std::vector<Released<MTL::Buffer>> owned;
  std::array<MTL::Buffer*, LaunchPlan::kMaxBuffers> bound{};
  for (const LaunchPlan::Buffer& b : plan.buffers()) {
    if (b.index == kForwardParams) continue;
    if (b.scratch) {
      owned.emplace_back(device_->newBuffer(std::max<uint64_t>(b.bytes, 1), MTL::ResourceStorageModePrivate));
    } else {
      const auto it = tensors.find(b.index);
      if (it == tensors.end())
        throw std::invalid_argument("metal backend: no tensor for buffer " + std::to_string(b.index) + " (" +
                                    std::string(b.name) + ")");
      owned.emplace_back(device_->newBuffer(it->second.data(), std::max<size_t>(it->second.size(), 1),
                                            MTL::ResourceStorageModeShared));
    }
    bound[b.index] = owned.back().object;
  }
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* encoder = commands->computeCommandEncoder();
  encode(library, kernel, plan, encoder, bound);
  encoder->endEncoding();
  commands->commit();
  commands->waitUntilCompleted();
  if (commands->status() == MTL::CommandBufferStatusError)
    throw std::runtime_error("metal backend: " + kernel.name + ": " + describe(commands->error()));
  for (const LaunchPlan::Buffer& b : plan.buffers())
    if (b.written && !b.scratch) {
      std::span<std::byte> out = tensors.at(b.index);
      std::memcpy(out.data(), bound[b.index]->contents(), std::min<size_t>(out.size(), bound[b.index]->length()));
    }
  RunStats stats;
  stats.seconds = commands->GPUEndTime() - commands->GPUStartTime();
  return stats;
}

}  // namespace mfagen
