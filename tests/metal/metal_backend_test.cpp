// The Metal backend's own code (runtime/backends/metal/metal_backend.cpp),
// unchanged, on the metal-cpp stand-in: every case of the selftest matrix
// (every kernel kind and feature) judged against the float64 reference
// through the Metal backend, and each case's kernel through run()
// (LaunchPlan and DispatchPlan) and prepare() + encode() into an app's
// command buffer, bit-identical to the cpu backend; the pipeline cache;
// clear errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "attention_call.h"
#include "generated_manifest.h"
#include "mfagen/call_trace.h"
#include "mfagen/cpu_backend.h"
#include "mfagen/metal_backend.h"
#include "mfagen/metal_cpp_standin.h"
#include "selftest/builtin_matrix.h"
#include "selftest/case_kernels.h"
#include "selftest/generated_kernels.h"
#include "selftest/kernel_query.h"
#include "selftest/run_case.h"
#include "spec/spec_parser.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using Storage = std::map<uint32_t, std::vector<std::byte>>;

// The selftest's full matrix: every dtype and causal mode, GQA, each
// feature, decode and backward, at small ragged shapes.
class MetalBackendOnStandIn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cases_ = new std::vector<selftest::SelftestCase>(selftest::builtin_matrix(selftest::MatrixSize::full));
    kernels_ = new selftest::GeneratedKernels(selftest::kernels_of(*cases_), "mfagen_metal_backend");
  }
  static void TearDownTestSuite() {
    delete kernels_;
    delete cases_;
  }
  static const Library& library() { return kernels_->library(); }
  // The kernel a case itself names (for a backward case, its gradients).
  static const KernelEntry& kernel_of(const selftest::SelftestCase& c) {
    const bool backward = c.kernel.kind == spec::Kind::backward;
    return selftest::select_named(
        library(),
        selftest::query_for_kernel(c.kernel, c.shape, backward ? KernelKind::backward : KernelKind::forward,
                                   !backward && c.kernel.lse),
        c.kernel.name);
  }
  // The first case and its kernel, for the tests of one call.
  static const selftest::SelftestCase& first_case() { return cases_->front(); }

  static std::vector<selftest::SelftestCase>* cases_;
  static selftest::GeneratedKernels* kernels_;
};
std::vector<selftest::SelftestCase>* MetalBackendOnStandIn::cases_ = nullptr;
selftest::GeneratedKernels* MetalBackendOnStandIn::kernels_ = nullptr;

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

// The matrix in four shards, each its own ctest test, so that two cores share
// the longest test of the suite (issue 36); together they cover every case.
class MetalBackendMatrixShard : public MetalBackendOnStandIn, public ::testing::WithParamInterface<size_t> {};
constexpr size_t kMatrixShards = 4;

TEST_P(MetalBackendMatrixShard, EveryKindAndFeatureMatchesTheCpuBackendBitForBit) {
  CpuBackend cpu;
  MetalBackend metal;
  ASSERT_EQ(metal.name(), "metal");
  EXPECT_FALSE(metal.measures_gpu_time()) << "the stand-in times an emulation, not a GPU";
  metal.prepare(library());
  size_t ran = 0;
  for (size_t i = GetParam(); i < cases_->size(); i += kMatrixShards) {
    const selftest::SelftestCase& c = (*cases_)[i];
    ++ran;
    SCOPED_TRACE(c.name);
    // Judged against the float64 reference as `mfagen selftest --backend metal` judges it.
    const selftest::CaseResult judged = selftest::run_case(c, library(), metal);
    EXPECT_TRUE(judged.passed()) << judged.error;
    for (const selftest::Check& check : judged.checks) EXPECT_TRUE(check.ok) << check.tensor << ": " << check.detail;
    // A cache write is judged byte for byte against the reference above: the
    // cpu backend's bytes are the same ones (`mfagen selftest` passes there).
    if (c.kernel.kind == spec::Kind::cache_append) continue;

    const KernelEntry& kernel = kernel_of(c);
    const test::AttentionCall call = test::make_call(c, kernel);
    const LaunchPlan plan = Library::launch_plan(kernel, call.call);
    Storage on_cpu = call.inputs, on_metal = call.inputs, on_metal_dispatch = call.inputs, encoded = call.inputs;
    cpu.run(library(), kernel, plan, test::bind(on_cpu));
    metal.run(library(), kernel, plan, test::bind(on_metal));
    metal.run(library(), kernel, Library::plan(kernel, call.call), test::bind(on_metal_dispatch));
    encode_into_app_buffers(metal, library(), kernel, plan, encoded);
    for (const LaunchPlan::Buffer& b : plan.buffers()) {
      if (!b.written || b.scratch) continue;
      EXPECT_TRUE(on_metal[b.index] == on_cpu[b.index]) << "run(LaunchPlan), buffer " << b.name;
      EXPECT_TRUE(on_metal_dispatch[b.index] == on_cpu[b.index]) << "run(DispatchPlan), buffer " << b.name;
      EXPECT_TRUE(encoded[b.index] == on_cpu[b.index]) << "prepare + encode, buffer " << b.name;
    }
    // One launch per kernel function: mask_mod's _blocks first, decode's combine, a planned batch's merge,
    // the backward's three (+ d_sinks).
    EXPECT_EQ(plan.launch_count, kernel.entries.size());
    EXPECT_EQ(kernel.entries.size(),
              (kernel.info.mask_mod ? 1u : 0u) + (kernel.info.backward                                   ? 3u + kernel.info.sinks
                                                  : kernel.info.decode || kernel.info.planned_batches ? 2u
                                                                                                      : 1u));
  }
  EXPECT_GT(ran, 0u) << "every shard has cases";
}

INSTANTIATE_TEST_SUITE_P(Shards, MetalBackendMatrixShard, ::testing::Range<size_t>(0, kMatrixShards));

TEST_F(MetalBackendOnStandIn, EveryPathCountsItsCallsInTheTrace) {
  set_call_trace_enabled(true);
  reset_call_statistics();
  MetalBackend metal;
  const KernelEntry& kernel = kernel_of(first_case());
  const test::AttentionCall c = test::make_call(first_case(), kernel);
  Storage a = c.inputs, b = c.inputs, encoded = c.inputs;
  metal.run(library(), kernel, Library::launch_plan(kernel, c.call), test::bind(a));
  metal.run(library(), kernel, Library::plan(kernel, c.call), test::bind(b));
  encode_into_app_buffers(metal, library(), kernel, Library::launch_plan(kernel, c.call), encoded);
  const CallStatistics stats = call_statistics();
  set_call_trace_enabled(false);
  ASSERT_EQ(stats.counts.size(), 1u);
  const CallCount& count = stats.counts[0];
  EXPECT_EQ(count.kernel, kernel.name);
  EXPECT_EQ(count.backend, "metal");
  EXPECT_EQ(count.seq_q, first_case().shape.seq_q);
  EXPECT_EQ(count.seq_k, first_case().shape.seq_k);
  EXPECT_EQ(count.calls, 3u) << "run(LaunchPlan), run(DispatchPlan), encode: one count each";
}

TEST_F(MetalBackendOnStandIn, ASecondCallCompilesAndBuildsNothing) {
  MetalBackend metal;
  const KernelEntry& kernel = kernel_of(first_case());
  const test::AttentionCall c = test::make_call(first_case(), kernel);
  const LaunchPlan plan = Library::launch_plan(kernel, c.call);
  Storage first = c.inputs, second = c.inputs;
  metal.run(library(), kernel, plan, test::bind(first));
  const metal_standin::DeviceCounters after_first = metal_standin::counters(metal.device());
  EXPECT_EQ(after_first.libraries_compiled, 1u);
  EXPECT_EQ(after_first.pipelines_built, 1u);
  metal.run(library(), kernel, plan, test::bind(second));
  const metal_standin::DeviceCounters after_second = metal_standin::counters(metal.device());
  EXPECT_EQ(after_second.libraries_compiled, 1u);
  EXPECT_EQ(after_second.pipelines_built, 1u);
  EXPECT_EQ(after_second.command_buffers_committed, 2u);
  EXPECT_EQ(second, first);

  // prepare() builds every kernel's pipelines once: one library per kernel
  // file, one pipeline per launch; then nothing more.
  metal.prepare(library());
  const metal_standin::DeviceCounters prepared = metal_standin::counters(metal.device());
  uint64_t launches = 0;
  for (const KernelEntry& k : library().kernels()) launches += k.entries.size();
  EXPECT_EQ(prepared.libraries_compiled, library().kernels().size());
  EXPECT_EQ(prepared.pipelines_built, launches);
  metal.prepare(library());
  EXPECT_EQ(metal_standin::counters(metal.device()).pipelines_built, launches);
}

TEST_F(MetalBackendOnStandIn, AKernelNeedingMoreThreadsThanTheDeviceAllowsIsRefused) {
  metal_standin::DeviceOptions small;
  small.max_threads_per_threadgroup = 32;
  MTL::Device* device = metal_standin::create_device(small);
  MetalBackend metal(device);
  device->release();  // the backend holds its own reference
  const KernelEntry& kernel = kernel_of(first_case());
  ASSERT_GT(kernel.info.threads, 32u);
  const test::AttentionCall c = test::make_call(first_case(), kernel);
  Storage tensors = c.inputs;
  try {
    metal.run(library(), kernel, Library::launch_plan(kernel, c.call), test::bind(tensors));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("allows 32 threads per threadgroup"), std::string::npos) << e.what();
  }
}

TEST_F(MetalBackendOnStandIn, PipelinesAreKeyedByEntryAndFunctionConstantValues) {
  // Two manifests naming one kernel file, differing only in a function
  // constant's value (generated kernels declare none; apps' manifests may).
  std::ifstream in(kernels_->directory() / "manifest.json");
  const nlohmann::json original = nlohmann::json::parse(in);
  std::vector<Library> libraries;
  for (int value : {1, 2}) {
    nlohmann::json manifest = original;
    nlohmann::json kernel;
    for (const nlohmann::json& k : original["kernels"])
      if (k["name"] == kernel_of(first_case()).name) kernel = k;
    kernel["function_constants"] = {{{"index", 0}, {"name", "kVariant"}, {"type", "int"}, {"value", value}}};
    manifest["kernels"] = nlohmann::json::array({kernel});
    libraries.push_back(Library::load_from_memory(manifest.dump(), kernels_->directory()));
  }
  MetalBackend metal;
  auto run = [&](const Library& library) {
    const KernelEntry& kernel = library.kernels().at(0);
    const test::AttentionCall c = test::make_call(first_case(), kernel);
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
    const char* spec = R"({"kernels": [{"dtype": "float16", "head_dim": 32}]})";
    manifest_ = test::generate_into(spec, dir_);
    case_ = test::case_for(spec::parse_spec_text(spec, "broken.json").at(0), {1, 2, 1, 8, 8});
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string run_error() {
    const Library library = Library::load(manifest_);
    const KernelEntry& kernel = library.kernels().at(0);
    const test::AttentionCall c = test::make_call(case_, kernel);
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
  selftest::SelftestCase case_;
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
