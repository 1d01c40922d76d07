// The Metal host API stand-in's own interface (runtime/metal_cpp_standin):
// devices with chosen limits, the findings recorded while encoding and
// running command buffers, and counters for tests (how many libraries were
// compiled, how many pipelines built). Apple's metal-cpp has none of this;
// code meant to run on both must use it only in tests.
#pragma once

#include <Metal/Metal.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mfagen::metal_standin {

// The families Device::supportsFamily() answers true for on a device of Apple
// GPU family `apple` (7: M1 ... 10: M5): Apple1..Apple`apple`, Mac2,
// Common1..Common3, Metal3 (Apple7 and later) and, when `metal4` (macOS 26
// and later), Metal4.
std::vector<MTL::GPUFamily> families_of(int apple, bool metal4);

struct DeviceOptions {
  std::string name = "mfagen cpu stand-in";
  NS::UInteger max_threads_per_threadgroup = 1024;     // per pipeline and per device
  NS::UInteger max_threadgroup_memory_length = 32768;  // bytes, static + setThreadgroupMemoryLength
  bool detectors = true;  // the cpu backend's out-of-bounds, race, barrier and uninitialized-read detectors
  // What supportsFamily() answers: by default an M5 on macOS 26.
  std::vector<MTL::GPUFamily> gpu_families = families_of(10, true);
  // Whether the OS's Metal compiler has TensorOps (<metal_tensor>,
  // MetalPerformancePrimitives). false (or no GPUFamilyMetal4 above): every
  // source that includes them fails to compile with the compiler's "file not
  // found", as where the SDK lacks them. Where true, such sources compile on
  // the cpu backend's TensorOps stand-in with LanguageVersion4_0 (the
  // stand-in's CompileOptions default to 3.1: set 4.0 explicitly).
  bool tensor_ops = true;
};

// A new device (an owned reference: release() it).
MTL::Device* create_device(const DeviceOptions& options = {});

enum class FindingKind {
  argument_not_bound,          // a [[buffer(n)]] argument of the kernel has nothing bound at n
  index_bound_twice,           // one buffer index set twice before one dispatch: the first binding is lost
  threads_above_limit,         // threads per threadgroup above the pipeline's maxTotalThreadsPerThreadgroup
  threadgroup_memory_missing,  // a [[threadgroup(n)]] argument without setThreadgroupMemoryLength(_, n)
  threadgroup_memory_invalid,  // a length not a multiple of 16, or the total above the device's limit
  missing_barrier,             // a concurrent encoder reads what an earlier dispatch wrote, with no barrier between
  encoder_misuse,              // no pipeline, an empty grid, a call after endEncoding, commit with an open encoder
  kernel_finding,              // a detector finding of the cpu backend while running the kernel
};
std::string_view to_string(FindingKind kind);

struct Finding {
  FindingKind kind{};
  std::string call;    // the API call that caused it, e.g. "dispatchThreadgroups #2 (attn_combine)"
  std::string detail;  // what is wrong, in words
  std::string to_string() const;
};

// What a committed command buffer recorded (encoding) and saw (running).
std::vector<Finding> findings(const MTL::CommandBuffer* commands);

struct DeviceCounters {
  uint64_t libraries_compiled = 0;  // newLibrary from source
  uint64_t pipelines_built = 0;     // newComputePipelineState
  uint64_t dispatches_run = 0;
  uint64_t command_buffers_committed = 0;
};
DeviceCounters counters(const MTL::Device* device);

}  // namespace mfagen::metal_standin
