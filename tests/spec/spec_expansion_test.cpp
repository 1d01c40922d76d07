// Lists expand to the cartesian product in table order (last field
// fastest); defaults fill what a spec leaves out; names are derived or kept.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spec/spec_parser.h"

namespace mfagen::spec {
namespace {

std::vector<std::string> names_of(const std::vector<KernelSpec>& specs) {
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  return names;
}

TEST(SpecExpansion, DefaultsFillOmittedFields) {
  auto specs = parse_spec_text(R"({"dtype": "bfloat16", "head_dim": 96})", "one.json");
  ASSERT_EQ(specs.size(), 1u);
  const KernelSpec& s = specs[0];
  EXPECT_EQ(s.kind, Kind::forward);
  EXPECT_EQ(s.dtype, DType::bfloat16);
  EXPECT_EQ(s.head_dim, 96u);
  EXPECT_EQ(s.head_dim_v, 96u);
  EXPECT_EQ(s.causal, Causal::none);
  EXPECT_TRUE(s.gqa);
  EXPECT_EQ(s.mask, MaskKind::none);
  EXPECT_FALSE(s.window);
  EXPECT_FALSE(s.softcap);
  EXPECT_FALSE(s.alibi);
  EXPECT_FALSE(s.sinks);
  EXPECT_EQ(s.layout, Layout::dense);
  EXPECT_EQ(s.kv_cache, KvCache::dense);
  EXPECT_TRUE(s.lse);
  EXPECT_FALSE(s.tiles.has_value());
  EXPECT_EQ(s.target, Target::apple9);
  EXPECT_EQ(s.name, "attn_fwd_bf16_d96_gqa");
  EXPECT_FALSE(s.name_given);
  EXPECT_EQ(s.origin.file, "one.json");
  EXPECT_EQ(s.origin.json_path, "");
}

TEST(SpecExpansion, EveryFieldIsRead) {
  auto specs = parse_spec_text(R"({
    "comment": "every field, none at its default",
    "kind": "backward", "dtype": "float32", "head_dim": 576, "head_dim_v": 512,
    "causal": "top_left", "gqa": false, "mask": "additive", "window": true,
    "softcap": true, "alibi": true, "sinks": true, "layout": "varlen", "lse": false, "accumulate": "float32",
    "tiles": {"block_q": 64, "block_k": 16, "simdgroups": 8}, "target": "apple7"})",
                               "all.json");
  ASSERT_EQ(specs.size(), 1u);
  const KernelSpec& s = specs[0];
  EXPECT_EQ(s.kind, Kind::backward);
  EXPECT_EQ(s.dtype, DType::float32);
  EXPECT_EQ(s.head_dim, 576u);
  EXPECT_EQ(s.head_dim_v, 512u);
  EXPECT_EQ(s.causal, Causal::top_left);
  EXPECT_FALSE(s.gqa);
  EXPECT_EQ(s.mask, MaskKind::additive);
  EXPECT_TRUE(s.window);
  EXPECT_TRUE(s.softcap);
  EXPECT_TRUE(s.alibi);
  EXPECT_TRUE(s.sinks);
  EXPECT_EQ(s.layout, Layout::varlen);
  EXPECT_FALSE(s.lse);
  EXPECT_EQ(s.tiles, (Tiles{64, 16, 8}));
  EXPECT_EQ(s.target, Target::apple7);
  EXPECT_EQ(s.name,
            "attn_bwd_f32_d576_dv512_causal_tl_mask_add_window_softcap_alibi_sinks_varlen_nolse_q64k16s8_apple7");
}

TEST(SpecExpansion, CartesianProductWithLastFieldFastest) {
  // Written in an order other than the table's, to show the table decides.
  auto specs = parse_spec_text(
      R"({"target": ["apple8", "apple9"], "head_dim": [64, 128], "dtype": ["float16", "float32"],
          "causal": ["none", "bottom_right"]})",
      "grid.json");
  ASSERT_EQ(specs.size(), 16u);
  EXPECT_EQ(names_of(specs), (std::vector<std::string>{
                                 "attn_fwd_f16_d64_gqa_apple8",
                                 "attn_fwd_f16_d64_gqa",
                                 "attn_fwd_f16_d64_causal_br_gqa_apple8",
                                 "attn_fwd_f16_d64_causal_br_gqa",
                                 "attn_fwd_f16_d128_gqa_apple8",
                                 "attn_fwd_f16_d128_gqa",
                                 "attn_fwd_f16_d128_causal_br_gqa_apple8",
                                 "attn_fwd_f16_d128_causal_br_gqa",
                                 "attn_fwd_f32_d64_gqa_apple8",
                                 "attn_fwd_f32_d64_gqa",
                                 "attn_fwd_f32_d64_causal_br_gqa_apple8",
                                 "attn_fwd_f32_d64_causal_br_gqa",
                                 "attn_fwd_f32_d128_gqa_apple8",
                                 "attn_fwd_f32_d128_gqa",
                                 "attn_fwd_f32_d128_causal_br_gqa_apple8",
                                 "attn_fwd_f32_d128_causal_br_gqa",
                             }));
  for (const auto& s : specs) EXPECT_EQ(s.origin.json_path, "");
}

TEST(SpecExpansion, ListsOfTilesAndBooleans) {
  auto specs = parse_spec_text(
      R"({"kernels": [{"dtype": "float16", "head_dim": 80, "lse": [true, false],
                       "tiles": [null, {"block_q": 32, "block_k": 64, "simdgroups": 4}]}]})",
      "tiles.json");
  EXPECT_EQ(names_of(specs), (std::vector<std::string>{
                                 "attn_fwd_f16_d80_gqa",
                                 "attn_fwd_f16_d80_gqa_q32k64s4",
                                 "attn_fwd_f16_d80_gqa_nolse",
                                 "attn_fwd_f16_d80_gqa_nolse_q32k64s4",
                             }));
}

TEST(SpecExpansion, SetsKeepFileOrderAndPaths) {
  auto specs = parse_spec_text(R"({
    "comment": "two models",
    "kernels": [
      {"comment": "llama", "dtype": "float16", "head_dim": 128, "causal": "bottom_right"},
      {"dtype": "bfloat16", "head_dim": [64, 256], "kind": "decode", "gqa": false},
      {"dtype": "float16", "head_dim": 576, "head_dim_v": 512, "name": "mla_decode", "kind": "decode"}
    ]})",
                               "set.json");
  EXPECT_EQ(names_of(specs), (std::vector<std::string>{
                                 "attn_fwd_f16_d128_causal_br_gqa",
                                 "attn_decode_bf16_d64",
                                 "attn_decode_bf16_d256",
                                 "mla_decode",
                             }));
  std::vector<std::string> paths;
  for (const auto& s : specs) paths.push_back(s.origin.json_path);
  EXPECT_EQ(paths, (std::vector<std::string>{"kernels[0]", "kernels[1]", "kernels[1]", "kernels[2]"}));
  EXPECT_TRUE(specs[3].name_given);
  EXPECT_FALSE(specs[2].name_given);
}

TEST(SpecExpansion, GivenNameWithSingleElementLists) {
  auto specs = parse_spec_text(R"({"dtype": ["float16"], "head_dim": [64], "name": "attn_small"})",
                               "named.json");
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].name, "attn_small");
  EXPECT_TRUE(specs[0].name_given);
}

TEST(SpecExpansion, DerivedNamesForSeveralSpecs) {
  struct Row {
    const char* json;
    const char* name;
  };
  const Row rows[] = {
      {R"({"dtype": "float16", "head_dim": 128, "causal": "bottom_right"})",
       "attn_fwd_f16_d128_causal_br_gqa"},
      {R"({"dtype": "float32", "head_dim": 64, "gqa": false, "target": "apple10"})",
       "attn_fwd_f32_d64_apple10"},
      {R"({"kind": "decode", "dtype": "bfloat16", "head_dim": 192, "head_dim_v": 128,
           "mask": "bool", "window": true})",
       "attn_decode_bf16_d192_dv128_gqa_mask_bool_window"},
      {R"({"kind": "backward", "dtype": "float16", "head_dim": 256, "softcap": true,
           "causal": "top_left", "tiles": {"block_q": 16, "block_k": 32, "simdgroups": 2}})",
       "attn_bwd_f16_d256_causal_tl_gqa_softcap_q16k32s2"},
      {R"({"dtype": "float16", "head_dim": 72, "alibi": true, "lse": false, "target": "apple8"})",
       "attn_fwd_f16_d72_gqa_alibi_nolse_apple8"},
  };
  for (const Row& row : rows) {
    auto specs = parse_spec_text(row.json, "names.json");
    ASSERT_EQ(specs.size(), 1u);
    EXPECT_EQ(specs[0].name, row.name) << row.json;
  }
}

TEST(SpecExpansion, EqualityIgnoresOrigin) {
  auto a = parse_spec_text(R"({"dtype": "float16", "head_dim": 64})", "a.json");
  auto b = parse_spec_text(R"({"kernels": [{"dtype": "float16", "head_dim": 64, "head_dim_v": 64}]})",
                           "b.json");
  EXPECT_EQ(a[0], b[0]);
  b[0].lse = false;
  EXPECT_NE(a[0], b[0]);
}

}  // namespace
}  // namespace mfagen::spec
