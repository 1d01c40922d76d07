// The Metal backend's own code (runtime/backends/metal/metal_backend.cpp),
// unchanged, on the metal-cpp stand-in: every kernel kind and feature through
// run() (LaunchPlan and DispatchPlan) and through prepare() + encode() into
// an app's command buffer, bit-identical to the cpu backend and within the
// tolerance of the float64 reference; the pipeline cache; clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include <filesystem>
#include <fstream>

#include "attention_backward_reference.h"
#include "attention_call.h"
#include "attention_reference.h"
#include "generated_manifest.h"
#include "gradient_tolerance.h"
#include <nlohmann/json.hpp>

#include "mfagen/call_trace.h"
#include "mfagen/cpu_backend.h"
#include "mfagen/metal_backend.h"
#include "mfagen/metal_cpp_standin.h"
#include "tolerance.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using Storage = std::map<uint32_t, std::vector<std::byte>>;

// Every kind and feature of the contract, small enough to run in seconds.
constexpr const char* kSpecs = R"({"kernels": [
  {"dtype": "float16", "head_dim": 32, "causal": ["none", "bottom_right"]},
  {"dtype": "bfloat16", "head_dim": 64, "causal": "top_left", "window": true, "softcap": true, "alibi": true},
  {"dtype": "float32", "head_dim": 32, "mask": "bool"},
  {"dtype": "float16", "head_dim": 32, "head_dim_v": 64, "mask": "additive", "gqa": false},
  {"kind": "decode", "dtype": "float16", "head_dim": 64, "causal": "bottom_right"},
  {"kind": "decode", "dtype": "bfloat16", "head_dim": 32, "softcap": true, "alibi": true},
  {"kind": "backward", "dtype": "float16", "head_dim": 32, "causal": "bottom_right"},
  {"kind": "backward", "dtype": "float32", "head_dim": 32, "window": true, "alibi": true}]})";

class MetalBackendOnStandIn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("mfagen_metal_backend_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    library_ = new Library(Library::load(test::generate_into(kSpecs, *dir_)));
  }
  static void TearDownTestSuite() {
    delete library_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static uint64_t seq_q_for(const KernelEntry& k) { return k.info.decode ? 3 : k.info.backward ? 29 : 37; }

  static fs::path* dir_;
  static Library* library_;
};
fs::path* MetalBackendOnStandIn::dir_ = nullptr;
Library* MetalBackendOnStandIn::library_ = nullptr;

// prepare() + encode() as an app does it: its own device objects, shared
// buffers for the tensors, private scratch buffers at the plan's sizes.
void encode_into_app_buffers(MetalBackend& backend, const Library& library, const KernelEntry& kernel,
                             const LaunchPlan& plan, Storage& tensors) {
  MTL::Device* device = backend.device();
  std::array<MTL::Buffer*, LaunchPlan::kMaxBuffers> buffers{};
  for (const LaunchPlan::Buffer& b : plan.buffers()) {
    if (b.index == kForwardParams) continue;
    buffers[b.index] = b.scratch ? device->newBuffer(b.bytes, MTL::ResourceStorageModePrivate)
                                 : device->newBuffer(tensors.at(b.index).data(), tensors.at(b.index).size(),
                                                     MTL::ResourceStorageModeShared);
  }
  MTL::CommandQueue* queue = device->newCommandQueue();
  NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
  MTL::CommandBuffer* commands = queue->commandBuffer();
  MTL::ComputeCommandEncoder* encoder = commands->computeCommandEncoder(MTL::DispatchTypeConcurrent);
  backend.encode(library, kernel, plan, encoder, buffers);
  encoder->endEncoding();
  commands->commit();
  commands->waitUntilCompleted();
  EXPECT_EQ(commands->status(), MTL::CommandBufferStatusCompleted)
      << (commands->error() ? commands->error()->localizedDescription()->utf8String() : "");
  for (const LaunchPlan::Buffer& b : plan.buffers())
    if (b.written && !b.scratch)
      std::memcpy(tensors.at(b.index).data(), buffers[b.index]->contents(), tensors.at(b.index).size());
  pool->release();
  queue->release();
  for (MTL::Buffer* b : buffers)
    if (b) b->release();
}

void expect_within_reference(const KernelEntry& kernel, const test::AttentionCall& c, Storage& result) {
  const reference::AttentionProblem& p = c.problem;
  if (kernel.info.backward) {
    const auto ref = reference::reference_attention_backward(p, c.d_out);
    const auto naive = reference::naive_attention_backward_in_dtype(p, c.d_out, c.type);
    EXPECT_TRUE(reference::check_gradient(test::widen(result[kBackwardDq], c.type), ref.dq, naive.dq, c.type, "dq",
                                          {1, p.heads_q, p.seq_q, p.head_dim}).ok);
    EXPECT_TRUE(reference::check_gradient(test::widen(result[kBackwardDk], c.type), ref.dk, naive.dk, c.type, "dk",
                                          {1, p.heads_kv, p.seq_k, p.head_dim}).ok);
    EXPECT_TRUE(reference::check_gradient(test::widen(result[kBackwardDv], c.type), ref.dv, naive.dv, c.type, "dv",
                                          {1, p.heads_kv, p.seq_k, p.head_dim_v}).ok);
    return;
  }
  const auto expected = reference::reference_attention(p);
  const auto verdict = reference::check_output(test::widen(result[kForwardOut], c.type), expected,
                                               reference::naive_attention_in_dtype(p, c.type), c.type, p);
  EXPECT_TRUE(verdict.ok) << verdict.detail;
  if (kernel.info.lse) {
    const std::vector<float> lse = test::widen(result[kForwardLse], reference::ElementType::float32);
    EXPECT_TRUE(reference::check_lse(lse, expected, p).ok);
  }
}

TEST_F(MetalBackendOnStandIn, EveryKindAndFeatureMatchesTheCpuBackendBitForBit) {
  CpuBackend cpu;
  MetalBackend metal;
  ASSERT_EQ(metal.name(), "metal");
  EXPECT_FALSE(metal.measures_gpu_time()) << "the stand-in times an emulation, not a GPU";
  uint64_t seed = 100;
  for (const KernelEntry& kernel : library_->kernels()) {
    SCOPED_TRACE(kernel.name);
    const test::AttentionCall c = test::make_call(kernel, seq_q_for(kernel), 45, seed += 10);
    const LaunchPlan plan = Library::launch_plan(kernel, c.call);
    Storage on_cpu = c.inputs, on_metal = c.inputs, on_metal_dispatch = c.inputs, encoded = c.inputs;
    cpu.run(*library_, kernel, plan, test::bind(on_cpu));
    metal.run(*library_, kernel, plan, test::bind(on_metal));
    metal.run(*library_, kernel, Library::plan(kernel, c.call), test::bind(on_metal_dispatch));
    metal.prepare(*library_);
    encode_into_app_buffers(metal, *library_, kernel, plan, encoded);
    for (const LaunchPlan::Buffer& b : plan.buffers()) {
      if (!b.written || b.scratch) continue;
      EXPECT_TRUE(on_metal[b.index] == on_cpu[b.index]) << "run(LaunchPlan), buffer " << b.name;
      EXPECT_TRUE(on_metal_dispatch[b.index] == on_cpu[b.index]) << "run(DispatchPlan), buffer " << b.name;
      EXPECT_TRUE(encoded[b.index] == on_cpu[b.index]) << "prepare + encode, buffer " << b.name;
    }
    EXPECT_EQ(plan.launch_count, kernel.info.backward ? 3u : kernel.info.decode ? 2u : 1u);
    expect_within_reference(kernel, c, on_metal);
  }
}

TEST_F(MetalBackendOnStandIn, EveryPathCountsItsCallsInTheTrace) {
  set_call_trace_enabled(true);
  reset_call_statistics();
  MetalBackend metal;
  const KernelEntry& kernel = library_->kernels().at(0);
  const test::AttentionCall c = test::make_call(kernel, 20, 30, 7);
  Storage a = c.inputs, b = c.inputs, encoded = c.inputs;
  metal.run(*library_, kernel, Library::launch_plan(kernel, c.call), test::bind(a));
  metal.run(*library_, kernel, Library::plan(kernel, c.call), test::bind(b));
  encode_into_app_buffers(metal, *library_, kernel, Library::launch_plan(kernel, c.call), encoded);
  const CallStatistics stats = call_statistics();
  set_call_trace_enabled(false);
  ASSERT_EQ(stats.counts.size(), 1u);
  const CallCount& count = stats.counts[0];
  EXPECT_EQ(count.kernel, kernel.name);
  EXPECT_EQ(count.backend, "metal");
  EXPECT_EQ(count.seq_q, 20u);
  EXPECT_EQ(count.seq_k, 30u);
  EXPECT_EQ(count.calls, 3u) << "run(LaunchPlan), run(DispatchPlan), encode: one count each";
}

TEST_F(MetalBackendOnStandIn, ASecondCallCompilesAndBuildsNothing) {
  MetalBackend metal;
  const KernelEntry& kernel = library_->kernels().at(0);
  const test::AttentionCall c = test::make_call(kernel, 20, 30, 7);
  const LaunchPlan plan = Library::launch_plan(kernel, c.call);
  Storage first = c.inputs, second = c.inputs;
  metal.run(*library_, kernel, plan, test::bind(first));
  const metal_standin::DeviceCounters after_first = metal_standin::counters(metal.device());
  EXPECT_EQ(after_first.libraries_compiled, 1u);
  EXPECT_EQ(after_first.pipelines_built, 1u);
  metal.run(*library_, kernel, plan, test::bind(second));
  const metal_standin::DeviceCounters after_second = metal_standin::counters(metal.device());
  EXPECT_EQ(after_second.libraries_compiled, 1u);
  EXPECT_EQ(after_second.pipelines_built, 1u);
  EXPECT_EQ(after_second.command_buffers_committed, 2u);
  EXPECT_EQ(second, first);

  // prepare() builds every kernel's pipelines once: one library per kernel
  // file, one pipeline per launch; then nothing more.
  metal.prepare(*library_);
  const metal_standin::DeviceCounters prepared = metal_standin::counters(metal.device());
  uint64_t launches = 0;
  for (const KernelEntry& k : library_->kernels()) launches += k.entries.size();
  EXPECT_EQ(prepared.libraries_compiled, library_->kernels().size());
  EXPECT_EQ(prepared.pipelines_built, launches);
  metal.prepare(*library_);
  EXPECT_EQ(metal_standin::counters(metal.device()).pipelines_built, launches);
}

TEST_F(MetalBackendOnStandIn, AKernelNeedingMoreThreadsThanTheDeviceAllowsIsRefused) {
  metal_standin::DeviceOptions small;
  small.max_threads_per_threadgroup = 32;
  MTL::Device* device = metal_standin::create_device(small);
  MetalBackend metal(device);
  device->release();  // the backend holds its own reference
  const KernelEntry& kernel = library_->kernels().at(0);
  ASSERT_GT(kernel.info.threads, 32u);
  const test::AttentionCall c = test::make_call(kernel, 20, 30, 7);
  Storage tensors = c.inputs;
  try {
    metal.run(*library_, kernel, Library::launch_plan(kernel, c.call), test::bind(tensors));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("allows 32 threads per threadgroup"), std::string::npos) << e.what();
  }
}

TEST_F(MetalBackendOnStandIn, PipelinesAreKeyedByEntryAndFunctionConstantValues) {
  // Two manifests naming one kernel file, differing only in a function
  // constant's value (generated kernels declare none; apps' manifests may).
  std::ifstream in(*dir_ / "manifest.json");
  const nlohmann::json original = nlohmann::json::parse(in);
  std::vector<Library> libraries;
  for (int value : {1, 2}) {
    nlohmann::json manifest = original;
    nlohmann::json kernel = original["kernels"][0];
    kernel["function_constants"] = {{{"index", 0}, {"name", "kVariant"}, {"type", "int"}, {"value", value}}};
    manifest["kernels"] = nlohmann::json::array({kernel});
    libraries.push_back(Library::load_from_memory(manifest.dump(), *dir_));
  }
  MetalBackend metal;
  auto run = [&](const Library& library) {
    const KernelEntry& kernel = library.kernels().at(0);
    const test::AttentionCall c = test::make_call(kernel, 20, 30, 7);
    Storage tensors = c.inputs;
    metal.run(library, kernel, Library::launch_plan(kernel, c.call), test::bind(tensors));
  };
  run(libraries[0]);
  run(libraries[1]);
  EXPECT_EQ(metal_standin::counters(metal.device()).libraries_compiled, 1u) << "one file, one library";
  EXPECT_EQ(metal_standin::counters(metal.device()).pipelines_built, 2u) << "one pipeline per constant value";
  run(libraries[0]);
  EXPECT_EQ(metal_standin::counters(metal.device()).pipelines_built, 2u);
}

// A one-kernel library in its own directory, to break on purpose.
class BrokenLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mfagen_metal_broken_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    manifest_ = test::generate_into(R"({"kernels": [{"dtype": "float16", "head_dim": 32}]})", dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string run_error() {
    const Library library = Library::load(manifest_);
    const KernelEntry& kernel = library.kernels().at(0);
    const test::AttentionCall c = test::make_call(kernel, 8, 8, 1);
    Storage tensors = c.inputs;
    MetalBackend metal;
    try {
      metal.run(library, kernel, Library::launch_plan(kernel, c.call), test::bind(tensors));
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
  fs::path kernel_file() const {
    for (const fs::directory_entry& e : fs::directory_iterator(dir_))
      if (e.path().extension() == ".metal") return e.path();
    return {};
  }
  fs::path dir_, manifest_;
};

TEST_F(BrokenLibrary, AMissingKernelFileNamesTheFile) {
  const fs::path file = kernel_file();
  fs::remove(file);
  EXPECT_NE(run_error().find(file.string()), std::string::npos) << run_error();
}

TEST_F(BrokenLibrary, AMetallibTheDeviceCannotLoadIsAClearError) {
  fs::path metallib = kernel_file();
  metallib.replace_extension(".metallib");
  std::ofstream(metallib) << "not a library";
  const std::string error = run_error();
  EXPECT_NE(error.find("cannot load"), std::string::npos) << error;
  EXPECT_NE(error.find("not a metallib"), std::string::npos) << error;
}

TEST_F(BrokenLibrary, ACompileFailureCarriesTheCompilerDiagnostics) {
  std::ofstream(kernel_file(), std::ios::app) << "\nkernel void broken(device float* x [[buffer(0)]]) { x[0] = y; }\n";
  const std::string error = run_error();
  EXPECT_NE(error.find("cannot load"), std::string::npos) << error;
  EXPECT_NE(error.find("'y'"), std::string::npos) << error;
}

TEST_F(BrokenLibrary, AKernelMissingFromItsFileIsNamed) {
  std::string manifest;
  {
    std::ifstream in(manifest_);
    manifest.assign(std::istreambuf_iterator<char>(in), {});
  }
  const Library original = Library::load(manifest_);
  const std::string entry = original.kernels().at(0).entries.at(0);
  // The manifest names an entry point the .metal file does not define.
  for (size_t at = manifest.find('"' + entry + '"'); at != std::string::npos;
       at = manifest.find('"' + entry + '"', at + 1))
    manifest.replace(at + 1, entry.size(), entry + "_gone");
  std::ofstream(manifest_) << manifest;
  const std::string error = run_error();
  EXPECT_NE(error.find("no kernel function " + entry + "_gone"), std::string::npos) << error;
}

}  // namespace
}  // namespace mfagen
