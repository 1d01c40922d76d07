// MetalBackend::capabilities() on the metal-cpp stand-in (not an Apple GPU):
// TensorOps detected as shipped peers detect them (GPU family Metal4, then a
// probe kernel using matmul2d that must compile and build a pipeline), both
// ways; the highest Apple family; MFAGEN_METAL_TENSOR_OPS=0; and selection
// with the detected capabilities running the TensorOps kernel where the
// device has TensorOps and its simdgroup_matrix twin where it does not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "attention_call.h"
#include "generated_manifest.h"
#include "mfagen/cpu_backend.h"
#include "mfagen/metal_backend.h"
#include "mfagen/metal_cpp_standin.h"
#include "spec/spec_parser.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Storage = std::map<uint32_t, std::vector<std::byte>>;

// A backend on a stand-in device configured by `options`.
struct OnDevice {
  explicit OnDevice(const metal_standin::DeviceOptions& options) {
    MTL::Device* device = metal_standin::create_device(options);
    backend = std::make_unique<MetalBackend>(device);
    device->release();  // the backend holds its own reference
  }
  metal_standin::DeviceCounters counters() const { return metal_standin::counters(backend->device()); }
  std::unique_ptr<MetalBackend> backend;
};

metal_standin::DeviceOptions device_with(std::vector<MTL::GPUFamily> families, bool tensor_ops = true) {
  metal_standin::DeviceOptions options;
  options.gpu_families = std::move(families);
  options.tensor_ops = tensor_ops;
  return options;
}

TEST(MetalCapabilities, AnM5WithMetal4HasTensorOpsAndProbesOnce) {
  OnDevice m5(metal_standin::DeviceOptions{});  // the stand-in's default: an M5 on macOS 26
  EXPECT_EQ(m5.counters().libraries_compiled, 0u) << "nothing is probed before capabilities() is asked";
  const DeviceCapabilities c = m5.backend->capabilities();
  EXPECT_EQ(c, (DeviceCapabilities{MetalVersion::v4_0, GpuFamily::apple10, true}));
  EXPECT_EQ(m5.backend->tensor_ops_diagnostic(), "");
  EXPECT_EQ(m5.counters().libraries_compiled, 1u) << "the probe";
  EXPECT_EQ(m5.counters().pipelines_built, 1u) << "the probe's pipeline";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m5.backend->capabilities(), c);
  EXPECT_EQ(m5.counters().libraries_compiled, 1u) << "detected once";
}

TEST(MetalCapabilities, WithoutGpuFamilyMetal4NothingIsProbed) {
  OnDevice macos15(device_with(metal_standin::families_of(10, false)));  // an M5 before macOS 26
  EXPECT_EQ(macos15.backend->capabilities(), (DeviceCapabilities{MetalVersion::v3_1, GpuFamily::apple10, false}));
  EXPECT_EQ(macos15.backend->tensor_ops_diagnostic(), "the device does not support GPU family Metal4");
  EXPECT_EQ(macos15.counters().libraries_compiled, 0u);
}

TEST(MetalCapabilities, AProbeThatDoesNotCompileTurnsTensorOpsOff) {
  // Metal4 reported, but the OS's compiler has no TensorOps.
  OnDevice no_mpp(device_with(metal_standin::families_of(10, true), false));
  EXPECT_EQ(no_mpp.backend->capabilities(), (DeviceCapabilities{MetalVersion::v4_0, GpuFamily::apple10, false}));
  EXPECT_THAT(no_mpp.backend->tensor_ops_diagnostic(),
              HasSubstr("the TensorOps probe does not compile: program_source: fatal error: 'metal_tensor' file not "
                        "found"));
  EXPECT_EQ(no_mpp.counters().libraries_compiled, 1u);
  EXPECT_EQ(no_mpp.counters().pipelines_built, 0u);
}

TEST(MetalCapabilities, TheHighestAppleFamilyIsReported) {
  EXPECT_EQ(OnDevice(device_with(metal_standin::families_of(8, false))).backend->capabilities(),
            (DeviceCapabilities{MetalVersion::v3_1, GpuFamily::apple8, false}));
  // An M4 on macOS 26: Metal 4 and TensorOps (its kernels still need apple10).
  EXPECT_EQ(OnDevice(device_with(metal_standin::families_of(9, true))).backend->capabilities(),
            (DeviceCapabilities{MetalVersion::v4_0, GpuFamily::apple9, true}));
  // A GPU of no Apple family: no mfagen kernel is for it.
  const DeviceCapabilities other =
      OnDevice(device_with({MTL::GPUFamilyMac2, MTL::GPUFamilyCommon3, MTL::GPUFamilyMetal3}))
          .backend->capabilities();
  EXPECT_EQ(other.gpu_family, GpuFamily::none);
  EXPECT_FALSE(other.tensor_ops);
}

TEST(MetalCapabilities, TheEnvironmentTurnsTensorOpsOff) {
  ::setenv("MFAGEN_METAL_TENSOR_OPS", "0", 1);
  OnDevice m5(metal_standin::DeviceOptions{});
  const DeviceCapabilities c = m5.backend->capabilities();
  ::unsetenv("MFAGEN_METAL_TENSOR_OPS");
  EXPECT_EQ(c, (DeviceCapabilities{MetalVersion::v4_0, GpuFamily::apple10, false}));
  EXPECT_EQ(m5.backend->tensor_ops_diagnostic(), "turned off by MFAGEN_METAL_TENSOR_OPS=0");
  EXPECT_EQ(m5.counters().libraries_compiled, 0u);
}

// A spec generated for both tiers, on disk as an app vendors it.
class BothTiers : public ::testing::Test {
 protected:
  static constexpr const char* kSpec =
      R"({"dtype": "float16", "head_dim": 64, "causal": "bottom_right", "target": ["apple10", "apple9"]})";
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mfagen_metal_tiers_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    library_.emplace(Library::load(test::generate_into(kSpec, dir_)));
  }
  void TearDown() override { fs::remove_all(dir_); }
  AttentionQuery query() const {
    AttentionQuery q;
    q.dtype = ElementType::float16;
    q.head_dim = q.head_dim_v = 64;
    q.causal = CausalMode::bottom_right;
    q.shape = {1, 4, 2, 40, 72};
    return q;
  }
  // Runs `kernel` on `backend`, returning what it wrote.
  Storage run(Backend& backend, const KernelEntry& kernel) {
    const spec::KernelSpec spec = spec::parse_spec_text(kSpec, "tiers.json").at(0);
    const test::AttentionCall c = test::make_call(test::case_for(spec, query().shape), kernel);
    Storage tensors = c.inputs;
    backend.run(*library_, kernel, Library::launch_plan(kernel, c.call), test::bind(tensors));
    return tensors;
  }
  fs::path dir_;
  std::optional<Library> library_;
};

TEST_F(BothTiers, TheTensorOpsKernelRunsWhereDetectedItsTwinElsewhere) {
  OnDevice m5(metal_standin::DeviceOptions{});
  const KernelEntry& tensor_kernel = library_->select(query(), m5.backend->capabilities());
  EXPECT_TRUE(tensor_kernel.requirements.tensor_ops) << tensor_kernel.name;
  const Storage on_m5 = run(*m5.backend, tensor_kernel);
  CpuBackend cpu;
  EXPECT_EQ(on_m5, run(cpu, tensor_kernel)) << "the Metal backend on the stand-in is the cpu backend, bit for bit";

  OnDevice no_mpp(device_with(metal_standin::families_of(10, true), false));
  const KernelEntry& fallback = library_->select(query(), no_mpp.backend->capabilities());
  EXPECT_FALSE(fallback.requirements.tensor_ops) << fallback.name;
  EXPECT_EQ(fallback.name, "attn_fwd_f16_d64_causal_br_gqa");
  run(*no_mpp.backend, fallback);
  // Asked for the TensorOps kernel anyway, the backend refuses it before compiling.
  const uint64_t compiled = no_mpp.counters().libraries_compiled;
  try {
    run(*no_mpp.backend, tensor_kernel);
    ADD_FAILURE() << "ran";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("metal backend: attn_fwd_f16_d64_causal_br_gqa_apple10 requires Metal 4.0, GPU "
                                    "family apple10 and TensorOps; this device offers Metal 4.0, GPU family apple10, "
                                    "no TensorOps (the TensorOps probe does not compile: "));
  }
  EXPECT_EQ(no_mpp.counters().libraries_compiled, compiled);
}

}  // namespace
}  // namespace mfagen
