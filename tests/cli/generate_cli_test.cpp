// `mfagen generate`, `list` and `explain` end to end: byte-identical output
// across runs and output directories, depfiles, every shipped spec set, and
// bad specs that exit 1 with the file and JSON path and write nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "mfagen_cli_test.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kSpecs = fs::path(MFAGEN_SOURCE_DIR) / "specs";

std::map<std::string, std::string> read_dir(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    files[e.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return files;
}

class GenerateCli : public test::MfagenCliTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
};

TEST_F(GenerateCli, ByteIdenticalAcrossRunsAndDirectories) {
  const std::string spec = (kSpecs / "llama.json").string();
  auto a = mfagen({"generate", spec, "-o", (dir_ / "a").string(), "--depfile", (dir_ / "a.d").string()});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("attn_fwd_f16_d128_causal_br_gqa"));
  auto b = mfagen({"generate", spec, "-o", (dir_ / "elsewhere" / "b").string(), "--quiet"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "");
  const auto files_a = read_dir(dir_ / "a"), files_b = read_dir(dir_ / "elsewhere" / "b");
  EXPECT_EQ(files_a, files_b);
  EXPECT_EQ(files_a.size(), 10u);  // 9 kernels and the manifest
  EXPECT_TRUE(files_a.contains("manifest.json"));
  std::ifstream depfile(dir_ / "a.d");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(depfile), {}),
            (dir_ / "a" / "manifest.json").string() + ": " + spec + "\n");
  // A second run into the same directory rewrites nothing.
  auto again = mfagen({"generate", spec, "-o", (dir_ / "a").string()});
  EXPECT_THAT(again.out, HasSubstr("0 files written, 10 unchanged"));
}

TEST_F(GenerateCli, EveryShippedSpecSetGenerates) {
  std::vector<std::string> all = {"generate"};
  for (const auto& e : fs::directory_iterator(kSpecs)) {
    if (e.path().extension() != ".json") continue;
    auto r = mfagen({"generate", e.path().string(), "-o", (dir_ / e.path().stem()).string(), "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.err;
    all.push_back(e.path().string());
  }
  all.insert(all.end(), {"-o", (dir_ / "all").string(), "--quiet"});
  auto r = mfagen(all);  // overlapping sets: identical kernels are kept once
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(GenerateCli, BadSpecsExitOneNameFileAndPathAndWriteNothing) {
  struct Case {
    std::string json;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"dtype": "float16", "head_dim": 64,)", "bad.json: invalid JSON at line 1, column 37: unexpected end of input"},
      {R"({"dtype": "float16", "head_dim": 64, "heads": 8})", "bad.json: unknown field \"heads\""},
      {R"({"kernels": [{"dtype": "float16", "head_dim": 600}]})",
       "bad.json: kernels[0].head_dim: expected an integer in 1..576, found 600"},
      {R"({"dtype": "float32", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 512, "simdgroups": 4}})",
       "bad.json: tiles.block_k: attn_fwd_f32_d64_gqa_q32k512s4: block_k 512 needs 65536 bytes of threadgroup memory"},
      {R"({"kind": "backward", "dtype": "float16", "head_dim": 64, "lse": false})",
       "bad.json: lse: attn_bwd_f16_d64_gqa_nolse: a backward kernel recomputes P from the forward's lse"},
  };
  for (const Case& c : cases) {
    const fs::path bad = write("bad.json", c.json);
    auto r = mfagen({"generate", bad.string(), "-o", (dir_ / "out").string(), "--depfile", (dir_ / "out.d").string()});
    EXPECT_EQ(r.exit_code, 1) << c.json;
    EXPECT_THAT(r.err, HasSubstr("mfagen generate: error: " + dir_.string()));
    EXPECT_THAT(r.err, HasSubstr(c.message)) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
    EXPECT_FALSE(fs::exists(dir_ / "out.d"));
  }
  // A name used by two different kernels in two files.
  const fs::path a = write("a.json", R"({"dtype": "float16", "head_dim": 64, "name": "attn"})");
  const fs::path b = write("b.json", R"({"dtype": "float16", "head_dim": 80, "name": "attn"})");
  auto r = mfagen({"generate", a.string(), b.string(), "-o", (dir_ / "out").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("duplicate kernel name \"attn\": already used by a different kernel at " + a.string()));
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(GenerateCli, ListAndExplain) {
  const std::string spec = (kSpecs / "deepseek.json").string();
  auto list = mfagen({"list", spec});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("attn_fwd_f16_d576_dv512_causal_br_gqa"));
  EXPECT_THAT(list.out, HasSubstr("attn_decode_bf16_d576_dv512_causal_br_gqa"));

  auto explain = mfagen({"explain", (kSpecs / "llama.json").string(), "--seq-q", "1024", "--seq-k", "1024",
                         "--heads-q", "1", "--heads-kv", "1"});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("threadgroup memory:  16384 bytes of the 32768-byte limit"));
  // The table's causal D 64 row: two key groups of four simdgroups, 16 rows each.
  EXPECT_THAT(explain.out, HasSubstr("tiles:               block_q 64, block_k 32, simdgroups 8, key_groups 2 (from "
                                     "the tile table for D 64 on apple9)"));
  EXPECT_THAT(explain.out, HasSubstr("row tiles:           2 per simdgroup (16 query rows each); 2 key groups of 4 "
                                     "simdgroups take 32 keys each of every 64-key staged block and merge after "
                                     "the last"));
  EXPECT_THAT(explain.out, HasSubstr("272 visited of 512"));  // causal: 2 + 4 + ... + 32 staged key blocks
  EXPECT_THAT(explain.out, HasSubstr("products:            simdgroup_matrix 8x8 MMAs"));
  EXPECT_THAT(explain.out, HasSubstr("staging:             float16 tiles; K and V take turns in one tile"));
  // D 64 with 2 x 32 keys staged per step: K and V fit a tile each; bfloat
  // is widened as it is staged.
  const fs::path d64 = dir_ / "d64.json";
  std::ofstream(d64) << R"({"dtype": ["float16", "bfloat16"], "head_dim": 64,
                            "tiles": {"block_q": 64, "block_k": 32, "simdgroups": 8, "key_groups": 2}})";
  auto resident = mfagen({"explain", d64.string()});
  ASSERT_EQ(resident.exit_code, 0) << resident.err;
  EXPECT_THAT(resident.out, HasSubstr("staging:             float16 tiles; K and V keep a tile each, staged together"));
  EXPECT_THAT(resident.out, HasSubstr("staging:             float32 (widened from bfloat16 as staged) tiles; K and V "
                                      "take turns in one tile"));
  // Fragment values past the registers a thread has are flagged (the model does not charge the spills);
  // the backward's limit is its own.
  const fs::path regs = dir_ / "regs.json";
  std::ofstream(regs) << R"({"kernels": [{"dtype": "float32", "head_dim": 256},
                                          {"kind": "backward", "dtype": "float16", "head_dim": 64}]})";
  auto spills = mfagen({"explain", regs.string()});
  ASSERT_EQ(spills.exit_code, 0) << spills.err;
  EXPECT_THAT(spills.out, HasSubstr("registers:           132 32-bit registers of fragment values per thread, limit 512; "
                                    "over "
                                    "the 128 registers a thread has, the compiler spills the rest"));
  EXPECT_THAT(spills.out, HasSubstr("registers of fragment values per thread, limit 1024"));
    // q in half (one register per lane and d tile), O and the scores in float32:
  // 2 row tiles x (8 + 2 x (8 + 4)).
  EXPECT_THAT(resident.out, HasSubstr("registers:           64 32-bit registers of fragment values per thread, "
                                      "limit 512\n"));
  // `list` spells key groups after the simdgroups: a spec's tiles, and what a manifest's table chose.
  auto listed = mfagen({"list", d64.string()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("tiles=64x32x8/2"));
  const fs::path out = dir_ / "llama_out";
  ASSERT_EQ(mfagen({"generate", (kSpecs / "llama.json").string(), "-o", out.string(), "--quiet"}).exit_code, 0);
  auto manifest = mfagen({"list", (out / "manifest.json").string()});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  EXPECT_THAT(manifest.out, HasSubstr("attn_fwd_f16_d64_causal_br_gqa       forward  float16   D=64 Dv=64    "
                                      "causal=bottom_right  gqa=yes  lse=yes  tiles=table:64x32x8/2"));
  // D 128: two groups for float16 (half q), one for bfloat16.
  EXPECT_THAT(manifest.out, HasSubstr("attn_fwd_f16_d128_gqa                forward  float16   D=128 Dv=128  "
                                      "causal=none          gqa=yes  lse=yes  tiles=table:64x32x8/2"));
  EXPECT_THAT(manifest.out, HasSubstr("attn_fwd_bf16_d128_gqa               forward  bfloat16  D=128 Dv=128  "
                                      "causal=none          gqa=yes  lse=yes  tiles=table:64x64x8    apple9"));
  auto bad = mfagen({"explain", spec, "--heads-q", "6", "--heads-kv", "4"});
  EXPECT_EQ(bad.exit_code, 1);

  // target apple10: the forward kernel runs on TensorOps, and says what it needs.
  const fs::path apple10 = dir_ / "apple10.json";
  std::ofstream(apple10) << R"({"dtype": "float16", "head_dim": 64, "target": "apple10"})";
  explain = mfagen({"explain", apple10.string()});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("products:            Metal 4 TensorOps: matmul2d of 16 rows per simdgroup"));
  EXPECT_THAT(explain.out, HasSubstr("needs Metal 4 and an apple10 GPU"));
}

}  // namespace
}  // namespace mfagen
