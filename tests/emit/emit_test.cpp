// The Emit stage: the manifest is deterministic, parseable and describes each
// kernel as the runtime needs it; depfiles escape paths for Make and Ninja;
// emit writes exactly the expected files and leaves identical ones alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "emit/depfile.h"
#include "emit/emit.h"
#include "emit/manifest.h"
#include "render/render_forward.h"
#include "spec/spec_parser.h"

namespace mfagen::emit {
namespace {

namespace fs = std::filesystem;

struct Generated {
  std::vector<plan::KernelPlan> plans;
  std::vector<std::string> sources;
};

Generated generate(const std::string& json) {
  Generated g;
  for (const spec::KernelSpec& s : spec::parse_spec_text(json, "e.json")) {
    g.plans.push_back(plan::plan_kernel(s));
    g.sources.push_back(render::render_forward(g.plans.back()));
  }
  return g;
}

constexpr const char* kSet = R"({"kernels": [
  {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "lse": false},
  {"kind": "decode", "dtype": "bfloat16", "head_dim": 64, "mask": "bool", "alibi": true}]})";

TEST(Manifest, DescribesEachKernelForTheRuntime) {
  const Generated g = generate(kSet);
  const std::string text = manifest_json(g.plans, g.sources);
  EXPECT_EQ(text, manifest_json(generate(kSet).plans, generate(kSet).sources));  // deterministic
  EXPECT_EQ(text.back(), '\n');
  const auto m = nlohmann::json::parse(text);
  EXPECT_EQ(m["format"], kManifestFormat);
  ASSERT_EQ(m["kernels"].size(), 2u);
  const auto& fwd = m["kernels"][0];
  EXPECT_EQ(fwd["name"], "attn_fwd_f16_d128_causal_br_gqa_nolse");
  EXPECT_EQ(fwd["file"], "attn_fwd_f16_d128_causal_br_gqa_nolse.metal");
  EXPECT_EQ(fwd["hash"], render::forward_kernel_hash(g.plans[0]));
  EXPECT_EQ(fwd["spec"]["causal"], "bottom_right");
  EXPECT_EQ(fwd["dispatch"]["threads_per_threadgroup"], g.plans[0].threads);
  EXPECT_EQ(fwd["dispatch"]["threadgroup_memory_bytes"], g.plans[0].threadgroup_bytes);
  EXPECT_EQ(fwd["params"]["bytes"], 136);
  std::vector<int> indices;
  for (const auto& b : fwd["buffers"]) indices.push_back(b["index"]);
  EXPECT_EQ(indices, (std::vector<int>{0, 1, 2, 3, 5}));  // no lse buffer
  EXPECT_EQ(fwd["buffers"][3]["access"], "write");

  const auto& dec = m["kernels"][1];
  EXPECT_EQ(dec["dispatch"]["combine_entry"], "attn_decode_bf16_d64_gqa_mask_bool_alibi_combine");
  EXPECT_EQ(dec["params"]["bytes"], g.plans[1].params_bytes);
  bool scratch = false;
  for (const auto& b : dec["buffers"]) scratch = scratch || b.value("scratch", false);
  EXPECT_TRUE(scratch);
  EXPECT_EQ(text.find("e.json"), std::string::npos);  // no paths: identical across directories
}

TEST(Depfile, EscapesPathsForMakeAndNinja) {
  EXPECT_EQ(escape_depfile_path("specs/my model.json"), "specs/my\\ model.json");
  EXPECT_EQ(escape_depfile_path("a#b$c"), "a\\#b$$c");
  EXPECT_EQ(depfile_text("out/manifest.json", {"a.json", "b c.json"}), "out/manifest.json: a.json b\\ c.json\n");
}

class EmitFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mfagen_emit_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(EmitFiles, WritesEveryKernelThenTheManifestAndLeavesIdenticalFilesAlone) {
  const Generated g = generate(kSet);
  const EmitResult first = emit_kernels(g.plans, g.sources, dir_ / "out", {"e.json"}, dir_ / "deps" / "k.d");
  EXPECT_EQ(first.written.size(), 4u);  // 2 kernels, depfile, manifest
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_ / "out")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"attn_decode_bf16_d64_gqa_mask_bool_alibi.metal",
                                             "attn_fwd_f16_d128_causal_br_gqa_nolse.metal", "manifest.json"}));
  std::ifstream kernel(dir_ / "out" / "attn_fwd_f16_d128_causal_br_gqa_nolse.metal");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kernel), {}), g.sources[0]);

  const auto mtime = fs::last_write_time(dir_ / "out" / "manifest.json");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const EmitResult again = emit_kernels(g.plans, g.sources, dir_ / "out", {"e.json"}, dir_ / "deps" / "k.d");
  EXPECT_TRUE(again.written.empty());
  EXPECT_EQ(again.unchanged.size(), 4u);
  EXPECT_EQ(fs::last_write_time(dir_ / "out" / "manifest.json"), mtime);
}

}  // namespace
}  // namespace mfagen::emit
