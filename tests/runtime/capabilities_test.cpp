// What a kernel requires of the device (manifest "requires") and what a
// backend offers (Backend::capabilities()): the manifest round trip, the
// reader's errors for malformed values, and selection with capabilities:
// the TensorOps kernel (target apple10, kind forward) where supported, its
// simdgroup_matrix twin of the same spec where not, and a clear error when
// only TensorOps kernels fit a device without them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "generated_manifest.h"
#include "mfagen/cpu_backend.h"
#include "mfagen/library.h"
#include "plan/dispatch_info.h"
#include "plan/tensor_ops.h"
#include "spec/spec_parser.h"

namespace mfagen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

// A forward spec for both tiers, plus decode and backward kernels of target
// apple10 (which stay on simdgroup_matrix).
constexpr const char* kTiers = R"({"kernels": [
  {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "target": ["apple10", "apple9"]},
  {"kind": ["decode", "backward"], "dtype": "float16", "head_dim": 128, "causal": "bottom_right",
   "target": "apple10"}]})";

constexpr const char* kTensorOps = "attn_fwd_f16_d128_causal_br_gqa_apple10";
constexpr const char* kSimdgroup = "attn_fwd_f16_d128_causal_br_gqa";

AttentionQuery prefill(uint64_t seq_q = 4096) {
  AttentionQuery q;
  q.dtype = ElementType::float16;
  q.head_dim = q.head_dim_v = 128;
  q.causal = CausalMode::bottom_right;
  q.need_lse = true;
  q.shape = {1, 32, 8, seq_q, 4096};
  return q;
}

// An M4 on macOS 26: Metal 4 and TensorOps, but not the M5's family.
constexpr DeviceCapabilities kMetal4Apple9{MetalVersion::v4_0, GpuFamily::apple9, true};

TEST(Capabilities, ThePlanMarksForwardKernelsOfTargetApple10) {
  for (const spec::KernelSpec& s : spec::parse_spec_text(kTiers, "tiers.json")) {
    const plan::KernelPlan p = plan::plan_kernel(s);
    const bool expected = s.kind == spec::Kind::forward && s.target == spec::Target::apple10;
    EXPECT_EQ(plan::uses_tensor_ops(s), expected) << s.name;
    EXPECT_EQ(p.tensor_ops, expected) << s.name;
    EXPECT_EQ(plan::forward_kernel_info(p).tensor_ops, expected) << s.name;  // the facts the runtime reads
    const plan::DeviceRequirements r = plan::device_requirements(p);
    EXPECT_EQ(r.tensor_ops, expected) << s.name;
    EXPECT_EQ(r.metal, expected ? "4.0" : "3.1") << s.name;
    EXPECT_EQ(r.gpu_family, expected ? "apple10" : "apple7") << s.name;
  }
}

TEST(Capabilities, ManifestRecordsWhatEachKernelRequiresAndTheRuntimeReadsIt) {
  const std::string text = test::manifest_for(kTiers);
  const Json m = Json::parse(text);
  ASSERT_EQ(m["kernels"].size(), 4u);
  const Json tensor_ops = {{"metal", "4.0"}, {"gpu_family", "apple10"}, {"tensor_ops", true}};
  const Json simdgroup = {{"metal", "3.1"}, {"gpu_family", "apple7"}, {"tensor_ops", false}};
  std::map<std::string, Json> written;
  for (const Json& k : m["kernels"]) written[k["name"]] = k["requires"];
  EXPECT_EQ(written.at(kTensorOps), tensor_ops);
  EXPECT_EQ(written.at(kSimdgroup), simdgroup);
  EXPECT_EQ(written.at("attn_decode_f16_d128_causal_br_gqa_apple10"), simdgroup);
  EXPECT_EQ(written.at("attn_bwd_f16_d128_causal_br_gqa_apple10"), simdgroup);
  // Keys in a fixed order: the manifest stays byte-identical run to run.
  EXPECT_THAT(text, HasSubstr(R"("requires": {
        "metal": "4.0",
        "gpu_family": "apple10",
        "tensor_ops": true
      })"));

  const Library library = Library::load_from_memory(text);
  for (const KernelEntry& k : library.kernels()) {
    const bool tensor = k.name == kTensorOps;
    const KernelRequirements expected =
        tensor ? KernelRequirements{MetalVersion::v4_0, GpuFamily::apple10, true} : KernelRequirements{};
    EXPECT_EQ(k.requirements, expected) << k.name;
    EXPECT_EQ(k.info.tensor_ops, tensor) << k.name;
  }

  // Manifests written before "requires" existed: the baseline, which every
  // kernel of theirs needs.
  Json old = m;
  for (Json& k : old["kernels"]) k.erase("requires");
  for (const KernelEntry& k : Library::load_from_memory(old.dump()).kernels()) {
    EXPECT_EQ(k.requirements, KernelRequirements{}) << k.name;
    EXPECT_FALSE(k.info.tensor_ops) << k.name;
  }
}

std::string load_error(const std::function<void(Json&)>& edit) {
  Json m = Json::parse(test::manifest_for(kTiers));
  edit(m);
  try {
    Library::load_from_memory(m.dump());
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "loaded";
}

TEST(Capabilities, MalformedRequirementsNameTheKernelAndField) {
  const std::string where = std::string("manifest: kernel 0 (") + kTensorOps + "): kernels[0].requires";
  struct Row {
    const char* what;
    std::function<void(Json&)> edit;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"not an object", [](Json& m) { m["kernels"][0]["requires"] = Json::array(); },
       where + ": expected an object, got []"},
      {"unknown Metal version", [](Json& m) { m["kernels"][0]["requires"]["metal"] = "4.1"; },
       where + ".metal: expected one of \"3.0\", \"3.1\", \"3.2\", \"4.0\", got \"4.1\""},
      {"version as a number", [](Json& m) { m["kernels"][0]["requires"]["metal"] = 4.0; },
       where + ".metal: expected one of \"3.0\", \"3.1\", \"3.2\", \"4.0\", got 4.0"},
      {"unknown family", [](Json& m) { m["kernels"][0]["requires"]["gpu_family"] = "apple11"; },
       where + ".gpu_family: expected one of \"apple7\", \"apple8\", \"apple9\", \"apple10\", got \"apple11\""},
      {"missing family", [](Json& m) { m["kernels"][0]["requires"].erase("gpu_family"); },
       where + ": missing field \"gpu_family\""},
      {"tensor_ops not a boolean", [](Json& m) { m["kernels"][0]["requires"]["tensor_ops"] = "yes"; },
       where + ".tensor_ops: expected true or false, got \"yes\""},
      {"TensorOps below Metal 4", [](Json& m) { m["kernels"][0]["requires"]["metal"] = "3.2"; },
       where + ".metal: expected \"4.0\" (TensorOps, MetalPerformancePrimitives, need Metal 4), got \"3.2\""},
      {"a requirement this runtime does not know", [](Json& m) { m["kernels"][0]["requires"]["raytracing"] = true; },
       where + ": expected only \"metal\", \"gpu_family\" and \"tensor_ops\" (a requirement this runtime does not "
               "know: regenerate the kernels with a matching mfagen), got {\"gpu_family\":\"apple10\",\"metal\":"
               "\"4.0\",\"raytracing\":true,\"tensor_ops\":true}"},
  };
  for (const Row& row : rows) EXPECT_EQ(load_error(row.edit), row.message) << row.what;
}

TEST(Capabilities, TensorOpsKernelWhereSupportedItsSimdgroupTwinElsewhere) {
  const Library library = Library::load_from_memory(test::manifest_for(kTiers));
  const AttentionQuery q = prefill();
  const CpuBackend emulating;  // reports TensorOps (its Metal stand-in runs matmul2d)
  const CpuBackend without(true, {}, CpuBackend::kNoTensorOps);
  EXPECT_TRUE(emulating.capabilities().tensor_ops);
  EXPECT_FALSE(without.capabilities().tensor_ops);

  EXPECT_EQ(library.select(q, emulating.capabilities()).name, kTensorOps);
  EXPECT_EQ(library.select(q, DeviceCapabilities::all()).name, kTensorOps);
  // The same call falls back to the simdgroup_matrix kernel of the same spec.
  EXPECT_EQ(library.select(q, without.capabilities()).name, kSimdgroup);
  EXPECT_EQ(library.select(q, kMetal4Apple9).name, kSimdgroup);  // TensorOps, but not an M5
  EXPECT_EQ(library.select(q, DeviceCapabilities{MetalVersion::v3_2, GpuFamily::apple10, true}).name,
            kSimdgroup);  // no Metal 4 (an inconsistent device, still refused)
  EXPECT_EQ(library.select(q).name, kSimdgroup);  // no capabilities given: the baseline

  // Decode and backward kernels of target apple10 run on every device.
  EXPECT_EQ(library.select(prefill(1), without.capabilities()).name, "attn_decode_f16_d128_causal_br_gqa_apple10");
  AttentionQuery backward = prefill();
  backward.kind = KernelKind::backward;
  EXPECT_EQ(library.select(backward, DeviceCapabilities{}).name, "attn_bwd_f16_d128_causal_br_gqa_apple10");
}

TEST(Capabilities, TheTensorOpsKernelWinsWhateverTheManifestOrder) {
  const Library library = Library::load_from_memory(test::manifest_for(
      R"({"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "target": ["apple9", "apple10"]})"));
  ASSERT_EQ(library.kernels()[0].name, kSimdgroup);
  EXPECT_EQ(library.select(prefill(), DeviceCapabilities::all()).name, kTensorOps);
  EXPECT_EQ(library.select(prefill(), CpuBackend::kNoTensorOps).name, kSimdgroup);
  // The rule's other preferences come first: a kernel without lse serves a
  // call that needs none, TensorOps or not.
  const Library nolse = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "target": "apple10"},
    {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "lse": false}]})"));
  AttentionQuery q = prefill();
  q.need_lse = false;
  EXPECT_EQ(nolse.select(q, DeviceCapabilities::all()).name, "attn_fwd_f16_d128_causal_br_gqa_nolse");
  q.need_lse = true;
  EXPECT_EQ(nolse.select(q, DeviceCapabilities::all()).name, kTensorOps);
}

TEST(Capabilities, OnlyTensorOpsKernelsOnADeviceWithoutThemIsAClearError) {
  const Library library = Library::load_from_memory(
      test::manifest_for(R"({"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "target": "apple10"})"));
  const AttentionQuery q = prefill();
  EXPECT_EQ(library.find(q, CpuBackend::kNoTensorOps), nullptr);
  EXPECT_NE(library.find(q, CpuBackend::kEmulatedCapabilities), nullptr);
  auto message = [&](const DeviceCapabilities& device) {
    try {
      library.select(q, device);
    } catch (const SelectionError& e) {
      return std::string(e.what());
    }
    return std::string("selected");
  };
  // What was asked, on which device, which kernel exists, what it requires and why it was refused.
  EXPECT_EQ(message(CpuBackend::kNoTensorOps),
            "no kernel for forward float16, D 128, Dv 128, causal bottom_right, 32 q heads over 8, seq_q 4096, lse on "
            "a device with Metal 3.2, GPU family apple10, no TensorOps: the kernels that fit need more of the device "
            "(a backend's capabilities() says what it offers):\n"
            "  attn_fwd_f16_d128_causal_br_gqa_apple10 requires Metal 4.0, GPU family apple10 and TensorOps; the "
            "device lacks Metal 4.0 and TensorOps");
  EXPECT_THAT(message(DeviceCapabilities{}),
              HasSubstr("requires Metal 4.0, GPU family apple10 and TensorOps; the device lacks Metal 4.0, GPU "
                        "family apple10 and TensorOps"));
  EXPECT_THAT(message(kMetal4Apple9), HasSubstr("; the device lacks GPU family apple10"));
  EXPECT_THAT(message(CpuBackend::kNoTensorOps), Not(HasSubstr("closest")));
  // Calls the kernel does not fit anyway keep the usual message, which shows
  // what the closest kernels require.
  AttentionQuery other = q;
  other.head_dim = other.head_dim_v = 64;
  try {
    library.select(other, CpuBackend::kNoTensorOps);
    ADD_FAILURE() << "selected";
  } catch (const SelectionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("closest:\n  attn_fwd_f16_d128_causal_br_gqa_apple10 (forward float16, D 128, "
                                    "Dv 128, causal bottom_right, requires Metal 4.0, GPU family apple10 and "
                                    "TensorOps)"));
  }
}

TEST(Capabilities, CpuBackendWithoutTensorOpsRefusesToRunTensorOpsKernels) {
  const Library library = Library::load_from_memory(test::manifest_for(kTiers));
  const KernelEntry& kernel = library.select(prefill(), DeviceCapabilities::all());
  ASSERT_EQ(kernel.name, kTensorOps);
  ForwardCall call;
  call.shape = prefill().shape;
  call.strides = contiguous_bhsd(call.shape, 128, 128);
  CpuBackend without(true, [](const Library&, const KernelEntry&) -> std::string { return "never compiled"; },
                     CpuBackend::kNoTensorOps);
  try {
    without.run(library, kernel, Library::plan(kernel, call), {});
    ADD_FAILURE() << "ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "cpu backend: attn_fwd_f16_d128_causal_br_gqa_apple10 requires Metal 4.0, GPU family apple10 and "
              "TensorOps, more than this backend reports (Metal 3.2, GPU family apple10, no TensorOps); select "
              "with library.select(query, backend.capabilities())");
  }
}

}  // namespace
}  // namespace mfagen
