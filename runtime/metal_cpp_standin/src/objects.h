// The stand-in's objects behind metal-cpp's class names: each public class
// (Foundation/Foundation.hpp, Metal/*.hpp) is implemented by one final class
// here that holds its state; member functions downcast with impl().
#pragma once

#include <Metal/Metal.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "mfagen/cpu/backend.h"
#include "mfagen/metal_cpp_standin.h"

namespace mfagen::metal_standin {

namespace cpu = ::mfagen::cpu;  // visible to the NS/MTL definitions through their using-directive

// An owned reference to a stand-in object: released when dropped.
template <class T>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T* adopted) : object_(adopted) {}
  static Owned retained(T* object) {
    if (object) object->retain();
    return Owned(object);
  }
  Owned(Owned&& other) noexcept : object_(other.object_) { other.object_ = nullptr; }
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      object_ = other.object_;
      other.object_ = nullptr;
    }
    return *this;
  }
  Owned(const Owned& other) : object_(other.object_) {
    if (object_) object_->retain();
  }
  Owned& operator=(const Owned& other) { return *this = Owned::retained(other.object_); }
  ~Owned() { reset(); }
  void reset() {
    if (object_) object_->release();
    object_ = nullptr;
  }
  T* get() const { return object_; }
  T* operator->() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  T* object_ = nullptr;
};

struct StringImpl final : NS::String {
  std::string text;
  explicit StringImpl(std::string t) : text(std::move(t)) {}
};

struct ErrorImpl final : NS::Error {
  NS::Integer code = 0;
  Owned<NS::String> domain, description;
  ErrorImpl(std::string_view domain_name, NS::Integer error_code, std::string text);
};

// Whether `family` is among the device's configured GPU families.
bool supports_family(const DeviceOptions& options, MTL::GPUFamily family);

// *error = an autoreleased error (when error is not null), as Metal reports failures.
void report_error(NS::Error** error, std::string_view domain, NS::Integer code, std::string text);

struct DeviceImpl final : MTL::Device {
  DeviceOptions options;
  Owned<NS::String> device_name;
  std::atomic<uint64_t> libraries_compiled{0}, pipelines_built{0}, dispatches_run{0}, command_buffers_committed{0};
  explicit DeviceImpl(DeviceOptions o);
};

struct BufferImpl final : MTL::Buffer {
  Owned<MTL::Device> owner;
  std::vector<std::byte> bytes;
  MTL::StorageMode mode = MTL::StorageModeShared;
};

// The stand-in's language version when none is set (Metal's is the newest the
// OS has; the stand-in stays at the version mfagen's simdgroup_matrix kernels need).
inline constexpr MTL::LanguageVersion kDefaultLanguageVersion = MTL::LanguageVersion3_1;

struct CompileOptionsImpl final : MTL::CompileOptions {
  bool fast_math = true;  // Metal's default
  MTL::LanguageVersion version = kDefaultLanguageVersion;
};

struct FunctionConstantValuesImpl final : MTL::FunctionConstantValues {
  struct Value {
    MTL::DataType type = MTL::DataTypeNone;
    std::array<std::byte, 4> bytes{};
  };
  std::map<uint32_t, Value> values;
};

struct LibraryImpl final : MTL::Library {
  Owned<MTL::Device> owner;
  std::string source;
  std::shared_ptr<const cpu::Module> module;  // compiled without function constant values
};

struct FunctionImpl final : MTL::Function {
  Owned<MTL::Library> library;
  Owned<NS::String> function_name;
  std::map<uint32_t, cpu::ConstantValue> constants;
};

struct PipelineImpl final : MTL::ComputePipelineState {
  Owned<MTL::Device> owner;
  std::shared_ptr<const cpu::Module> module;  // with the function's constant values compiled in
  const cpu::KernelSignature* kernel = nullptr;
  NS::UInteger max_threads = 1024;
};

struct QueueImpl final : MTL::CommandQueue {
  Owned<MTL::Device> owner;
};

// One recorded dispatch: what the encoder state was when it was encoded.
struct RecordedDispatch {
  struct Binding {
    uint32_t index = 0;
    Owned<MTL::Buffer> buffer;       // setBuffer
    uint64_t offset = 0;
    std::vector<std::byte> bytes;    // setBytes (copied when encoded, as Metal does)
  };
  std::string call;
  Owned<MTL::ComputePipelineState> pipeline;
  cpu::Dim3 threadgroups, threads;
  std::vector<Binding> bindings;            // the kernel's buffer arguments
  std::map<uint32_t, uint64_t> threadgroup_lengths;
  bool runnable = true;                     // no encoding finding stops it
};

struct EncoderImpl;

struct CommandBufferImpl final : MTL::CommandBuffer {
  Owned<MTL::CommandQueue> queue;
  std::vector<RecordedDispatch> dispatches;
  std::vector<Finding> findings;
  EncoderImpl* open_encoder = nullptr;  // not owned: the encoder retains this buffer
  uint32_t encoders = 0, dispatch_count = 0;
  MTL::CommandBufferStatus state = MTL::CommandBufferStatusNotEnqueued;
  Owned<NS::Error> failure;
  double start_seconds = 0, end_seconds = 0;
  DeviceImpl& device_impl() const;
  void run();  // executes the recorded dispatches (commit)
};

struct EncoderImpl final : MTL::ComputeCommandEncoder {
  struct Bound {
    Owned<MTL::Buffer> buffer;
    uint64_t offset = 0;
    std::vector<std::byte> bytes;
    bool inline_bytes = false;
  };
  Owned<MTL::CommandBuffer> owner;
  CommandBufferImpl* commands = nullptr;
  MTL::DispatchType type = MTL::DispatchTypeSerial;
  std::string name;  // "computeCommandEncoder #n"
  Owned<MTL::ComputePipelineState> pipeline;
  std::map<uint32_t, Bound> bound;
  std::set<uint32_t> bound_since_dispatch;
  std::map<uint32_t, uint64_t> threadgroup_lengths;
  std::map<const MTL::Buffer*, std::string> unsynchronized_writes;  // buffer -> the dispatch that wrote it
  bool ended = false;
  ~EncoderImpl() override;
  void finding(FindingKind kind, std::string call, std::string detail);
  bool usable(std::string_view call);  // false (and a finding) after endEncoding
};

// Seconds on a steady clock, for the command buffer's GPU times.
double now_seconds();

template <class Impl, class Public>
Impl* impl(Public* object) {
  return static_cast<Impl*>(object);
}
template <class Impl, class Public>
const Impl* impl(const Public* object) {
  return static_cast<const Impl*>(object);
}

}  // namespace mfagen::metal_standin
