// `mfagen profile`, `mfagen exec --profile` and `mfagen explain --profile`
// end to end: the built binary on a small spec and a hand-written kernel;
// reports say they are model predictions; bad options are clear errors that
// write nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/npy.h"
#include "mfagen_cli_test.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ProfileCli : public test::MfagenCliTest {
 protected:
  void SetUp() override {
    MfagenCliTest::SetUp();
    spec_ = dir_ / "spec.json";
    std::ofstream(spec_) << R"({"kernels": [{"dtype": "float16", "head_dim": 64, "causal": ["none", "bottom_right"]}]})";
  }
  fs::path spec_;
};

TEST_F(ProfileCli, TextJsonAndHtmlReportsForASpecCall) {
  const fs::path json = dir_ / "profile.json", html = dir_ / "report.html";
  auto r = mfagen({"profile", spec_.string(), "--causal", "bottom_right", "--heads-q", "2", "--heads-kv", "1",
                   "--seq-q", "128", "--seq-k", "128", "--chip", "m1_max,m3_max", "--json-out", json.string(),
                   "--report", html.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("predictions of a model"));
  EXPECT_THAT(r.out, HasSubstr("M1 Max"));
  EXPECT_THAT(r.out, HasSubstr("M3 Max"));
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_f16_d64_causal_br_gqa"));

  const nlohmann::json j = nlohmann::json::parse(read_text(json));
  ASSERT_EQ(j["kernels"].size(), 1u);
  const auto& k = j["kernels"][0];
  EXPECT_EQ(k["name"], "attn_fwd_f16_d64_causal_br_gqa");
  EXPECT_GT(k["launches"][0]["ops"]["mma_f32_f32"].get<double>(), 0);
  ASSERT_EQ(k["predictions"].size(), 2u);
  for (const auto& p : k["predictions"]) {
    EXPECT_GT(p["seconds"].get<double>(), 0);
    EXPECT_GT(p["utilization"].get<double>(), 0);
    EXPECT_LE(p["utilization"].get<double>(), 1);
  }
  const std::string page = read_text(html);
  EXPECT_THAT(page, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(page, HasSubstr("<svg"));
  EXPECT_THAT(page, ::testing::Not(HasSubstr("http")));
}

TEST_F(ProfileCli, FromSavedCountsPredictsTheSameWithoutRunning) {
  const fs::path json = dir_ / "saved.json";
  auto r = mfagen({"profile", spec_.string(), "--causal", "none", "--heads-q", "1", "--heads-kv", "1", "--seq-q",
                   "64", "--seq-k", "64", "--chip", "m4_max", "--json-out", json.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto again = mfagen({"profile", "--from", json.string(), "--chip", "m4_max", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);

  std::ofstream(dir_ / "broken.json") << R"({"kernels": [{"name": "x"}]})";
  auto bad = mfagen({"profile", "--from", (dir_ / "broken.json").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("broken.json: .kernels[0].origin: missing"));
  EXPECT_EQ(mfagen({"profile"}).exit_code, 1) << "neither specs nor --from";
}

TEST_F(ProfileCli, SideBySideOfTwoSpecFiles) {
  const fs::path other = dir_ / "other.json";
  std::ofstream(other) << R"({"dtype": "float32", "head_dim": 64})";
  auto r = mfagen({"profile", spec_.string(), other.string(), "--causal", "none", "--heads-q", "1", "--heads-kv",
                   "1", "--seq-q", "64", "--seq-k", "64", "--chip", "m2_max", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["name"], "attn_fwd_f16_d64_gqa");
  EXPECT_EQ(j["kernels"][1]["name"], "attn_fwd_f32_d64_gqa");
}

TEST_F(ProfileCli, ExecProfilesAnyKernel) {
  const std::vector<float> ones(64 * 4, 1.0f), zeros(64, 0.0f);
  io::NpyArray in = io::NpyArray::from(std::span<const float>(ones));
  io::NpyArray out = io::NpyArray::from(std::span<const float>(zeros));
  io::write_npy_atomic(dir_ / "in.npy", in);
  io::write_npy_atomic(dir_ / "out.npy", out);
  auto r = mfagen({"exec", (fs::path(MFAGEN_TEST_DATA_DIR) / "../cpu/kernels/profile_counts.metal").string(),
                   "--entry", "divergent", "--threadgroups", "1", "--threads-per-threadgroup", "64", "--buffer",
                   "0=" + (dir_ / "in.npy").string(), "--buffer", "1=" + (dir_ / "out.npy").string(), "--out-dir",
                   (dir_ / "o").string(), "--profile", "--chip", "m1", "--json", "--name", "mine"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& ops = j["kernels"][0]["launches"][0]["ops"];
  EXPECT_EQ(j["kernels"][0]["name"], "mine");
  EXPECT_EQ(ops["exp2"], 2);
  EXPECT_EQ(ops["log2"], 2);
  EXPECT_EQ(ops["f32_fma"], 62);
  EXPECT_EQ(j["kernels"][0]["predictions"][0]["chip"], "M1");
}

TEST_F(ProfileCli, ExplainShowsThePredictionBesideItsFigures) {
  auto r = mfagen({"explain", spec_.string(), "--heads-q", "1", "--heads-kv", "1", "--seq-q", "64", "--seq-k", "64",
                   "--profile", "--chip", "m5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("kernel device bytes:"));
  EXPECT_THAT(r.out, HasSubstr("predicted M5:"));
  EXPECT_THAT(r.out, HasSubstr("cost model, not measured"));
}

TEST_F(ProfileCli, BadChipAndUnmatchedKernelAreUserErrorsThatWriteNothing) {
  const fs::path json = dir_ / "never.json";
  auto r = mfagen({"profile", spec_.string(), "--chip", "m9_ultra", "--json-out", json.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--chip m9_ultra"));
  EXPECT_THAT(r.err, HasSubstr("M3 Max"));
  EXPECT_FALSE(fs::exists(json));

  r = mfagen({"profile", spec_.string(), "--dtype", "bfloat16", "--json-out", json.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(spec_.string()));
  EXPECT_FALSE(fs::exists(json));
}

// A serving step: per-sequence lengths, the batch as separate launches beside
// it (its ratio in the side-by-side table), the device bytes against the IO
// model; bad lists, --batch beside them and --separate without them are
// user errors naming the option, before anything runs.
TEST_F(ProfileCli, ServingStepWithPerSequenceLengthsAndSeparateLaunches) {
  const fs::path serving = dir_ / "serving.json", json = dir_ / "serving_profile.json";
  std::ofstream(serving) << R"({"kernels": [
      {"dtype": "float16", "head_dim": 64, "causal": "bottom_right", "layout": "varlen", "kv_cache": "paged"},
      {"kind": "decode", "dtype": "float16", "head_dim": 64, "causal": "bottom_right", "kv_cache": "paged"}]})";
  auto r = mfagen({"profile", serving.string(), "--heads-q", "2", "--heads-kv", "1", "--seqlens-q", "40,1x2",
                   "--cache-seqlens", "40,64..96x2", "--separate", "--chip", "m3_max", "--sample", "0",
                   "--json-out", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Sq per sequence 40, 1 x2"));
  EXPECT_THAT(r.out, HasSubstr("Sk per sequence 40, 64, 96"));
  EXPECT_THAT(r.out, HasSubstr("launch attn_fwd_f16_d64_causal_br_gqa_varlen_paged_merge"));
  EXPECT_THAT(r.out, HasSubstr("separate: attn_fwd_f16_d64_causal_br_gqa_varlen_paged + "
                               "attn_decode_f16_d64_causal_br_gqa_paged"));
  EXPECT_THAT(r.out, HasSubstr("IO model"));
  EXPECT_THAT(r.out, HasSubstr("Side by side"));
  const nlohmann::json j = nlohmann::json::parse(read_text(json));
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["io_model_bytes"], j["kernels"][1]["io_model_bytes"]);
  EXPECT_EQ(j["kernels"][1]["launches"].size(), 4u);

  const struct {
    std::vector<std::string> args;
    std::string says;
  } bad[] = {{{"--seqlens-q", "40,x2"}, "--seqlens-q 40,x2"},
             {{"--seqlens-q", "4..8"}, "needs a count"},
             {{"--seqlens-q", "1,1", "--seqlens-k", "64"}, "--seqlens-q lists 2 sequences and --seqlens-k 1"},
             {{"--seqlens-q", "1,1", "--batch", "2"}, "--batch"},
             {{"--separate"}, "--separate"},
             {{"--seqlens-q", "1,1", "--separate"}, "--separate: the batch needs prefills"},
             {{"--kv-dtype", "q5_1"}, "--kv-dtype q5_1"}};
  for (const auto& b : bad) {
    std::vector<std::string> args = {"profile", serving.string(), "--json-out", (dir_ / "never.json").string()};
    args.insert(args.end(), b.args.begin(), b.args.end());
    auto e = mfagen(args);
    EXPECT_EQ(e.exit_code, 1) << b.says;
    EXPECT_THAT(e.err, HasSubstr(b.says));
    EXPECT_FALSE(fs::exists(dir_ / "never.json"));
  }
}

TEST_F(ProfileCli, TuneRanksTileRowsAndRecordsTheCommand) {
  const fs::path json = dir_ / "tune.json";
  auto r = mfagen({"tune", spec_.string(), "--kernel", "attn_fwd_f16_d64_gqa", "--heads-q", "1", "--heads-kv", "1",
                   "--seq-q", "64", "--seq-k", "64", "--chip", "m1_max", "--block-q", "16,32", "--block-k", "32",
                   "--simdgroups", "1,2", "--json-out", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("predictions of a model"));
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_f16_d64_gqa"));
  EXPECT_THAT(r.out, HasSubstr("4 candidates (0 grid rows refused by the planner)"));
  EXPECT_THAT(r.out, HasSubstr("best: \"tiles\": {"));
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_THAT(doc["command"].get<std::string>(), HasSubstr("--block-q 16,32 --block-k 32 --simdgroups 1,2"));
  ASSERT_EQ(doc["kernels"].size(), 1u);
  const nlohmann::json& k = doc["kernels"][0];
  ASSERT_EQ(k["candidates"].size(), 4u);
  EXPECT_EQ(k["best"], k["candidates"][0]["tiles"]);
  for (size_t i = 1; i < 4; ++i)
    EXPECT_LE(k["candidates"][i - 1]["total_seconds"].get<double>(), k["candidates"][i]["total_seconds"].get<double>());

  // --write-table rewrites the row the kernel falls in (forward, head dims up
  // to 128) of a copy of the planner's table, and records the command there.
  const fs::path table = dir_ / "tile_table.json";
  fs::copy_file(fs::path(MFAGEN_SOURCE_DIR) / "generator" / "plan" / "tile_table.json", table);
  r = mfagen({"tune", spec_.string(), "--kernel", "attn_fwd_f16_d64_gqa", "--heads-q", "1", "--heads-kv", "1",
              "--seq-q", "64", "--seq-k", "64", "--chip", "m1_max", "--block-q", "16", "--block-k", "16",
              "--simdgroups", "2", "--write-table", table.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream table_in(table);
  const nlohmann::json rows = nlohmann::json::parse(table_in)["rows"];
  std::ifstream original_in(fs::path(MFAGEN_SOURCE_DIR) / "generator" / "plan" / "tile_table.json");
  const nlohmann::json original = nlohmann::json::parse(original_in)["rows"];
  ASSERT_EQ(rows.size(), original.size());
  // The kernel (float16, apple9, no mask) falls in the first forward row
  // for every target and causal mode; the rows of other targets (apple10's
  // TensorOps rows) and of causal kernels stay.
  size_t tuned = 0;
  while (tuned < rows.size() &&
         (rows[tuned]["kind"] != "forward" || rows[tuned].contains("target") || rows[tuned].contains("causal")))
    ++tuned;
  ASSERT_LT(tuned + 1, rows.size());
  EXPECT_EQ(rows[tuned]["tiles"], (nlohmann::json{{"block_q", 16}, {"block_k", 16}, {"simdgroups", 2}}));
  EXPECT_THAT(rows[tuned]["source"].get<std::string>(), HasSubstr("mfagen tune"));
  EXPECT_THAT(rows[tuned]["source"].get<std::string>(), HasSubstr("(kernel attn_fwd_f16_d64_gqa)"));
  for (size_t i = 0; i < rows.size(); ++i)
    if (i != tuned) EXPECT_EQ(rows[i], original[i]) << "row " << i << " untouched";

  const fs::path never = dir_ / "never.json";
  std::ofstream(dir_ / "not_a_table.json") << R"({"kernels": []})";
  r = mfagen({"tune", spec_.string(), "--write-table", (dir_ / "not_a_table.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("not a tile table"));
  r = mfagen({"tune", spec_.string(), "--kernel", "no_such_kernel", "--json-out", never.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no kernel named \"no_such_kernel\""));
  EXPECT_FALSE(fs::exists(never));
}

}  // namespace
}  // namespace mfagen
