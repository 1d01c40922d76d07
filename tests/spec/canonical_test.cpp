// canonical_json is stable and sensitive to every field; spec_hash follows it
// and the template version.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <set>
#include <string>

#include "spec/canonical.h"
#include "spec/spec_parser.h"

namespace mfagen::spec {
namespace {

KernelSpec base() {
  return parse_spec_text(R"({"dtype": "float16", "head_dim": 128, "causal": "bottom_right"})",
                         "base.json")[0];
}

TEST(Canonical, JsonHasEveryFieldInTableOrder) {
  EXPECT_EQ(canonical_json(base()),
            R"({"kind":"forward","dtype":"float16","head_dim":128,"head_dim_v":128,)"
            R"("causal":"bottom_right","gqa":true,"mask":"none","window":false,"softcap":false,)"
            R"("alibi":false,"lse":true,"accumulate":"float32","tiles":null,"target":"apple9",)"
            R"("name":"attn_fwd_f16_d128_causal_br_gqa"})");
}

// Serving features (DESIGN.md section 13) appear in the canonical form only
// when on, so that every kernel without them keeps its name and hash.
TEST(Canonical, ServingFeaturesAppearOnlyWhenOn) {
  KernelSpec s = base();
  EXPECT_EQ(canonical_json(s).find("sinks"), std::string::npos);
  s.sinks = true;
  EXPECT_NE(canonical_json(s).find(R"("alibi":false,"sinks":true,"lse":true)"), std::string::npos);
  auto back = parse_spec_text(canonical_json(s), "canonical.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0].sinks);
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128_causal_br_gqa_sinks");
  s.layout = Layout::varlen;
  EXPECT_NE(canonical_json(s).find(R"("sinks":true,"layout":"varlen","lse":true)"), std::string::npos);
  back = parse_spec_text(canonical_json(s), "canonical.json");
  EXPECT_EQ(back.at(0).layout, Layout::varlen);
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128_causal_br_gqa_sinks_varlen");
  s.layout = Layout::dense;
  s.kv_cache = KvCache::paged;
  EXPECT_NE(canonical_json(s).find(R"("sinks":true,"kv_cache":"paged","lse":true)"), std::string::npos);
  EXPECT_EQ(parse_spec_text(canonical_json(s), "canonical.json").at(0).kv_cache, KvCache::paged);
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128_causal_br_gqa_sinks_paged");
  s.kv_dtype = KvDType::q4_0;
  EXPECT_NE(canonical_json(s).find(R"("kv_cache":"paged","kv_dtype":"q4_0","lse":true)"), std::string::npos);
  EXPECT_EQ(parse_spec_text(canonical_json(s), "canonical.json").at(0).kv_dtype, KvDType::q4_0);
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128_causal_br_gqa_sinks_paged_kv_q4_0");
  s = base();
  s.dropout = true;
  EXPECT_NE(canonical_json(s).find(R"("alibi":false,"dropout":true,"lse":true)"), std::string::npos);
  EXPECT_TRUE(parse_spec_text(canonical_json(s), "canonical.json").at(0).dropout);
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128_causal_br_gqa_dropout");
}

// score_mod, mask_mod and what they read: in the canonical form (extents in
// their canonical spelling), parsed back to the same spec; the name carries
// a hash of them, so specs that differ only in an expression differ in name.
TEST(Canonical, ScoreFunctionsRoundTripAndNameTheirHash) {
  const char* text = R"({"dtype": "float16", "head_dim": 128, "causal": "bottom_right",
                         "score_mod": "score + rel[q_idx - kv_idx + Sk - 1] * s",
                         "mask_mod": "doc[b, kv_idx] >= 0",
                         "captures": {"rel": {"dtype": "float32", "shape": ["Sk + Sq - 1"]},
                                      "doc": {"dtype": "int32", "shape": ["B", "Sk"]}},
                         "scalars": ["s"]})";
  const KernelSpec s = parse_spec_text(text, "m.json").at(0);
  const std::string json = canonical_json(s);
  EXPECT_NE(json.find(R"("alibi":false,"score_mod":"score + rel[q_idx - kv_idx + Sk - 1] * s","mask_mod":)"
                      R"("doc[b, kv_idx] >= 0","captures":{"rel":{"dtype":"float32","shape":["Sq + Sk - 1"]},)"
                      R"("doc":{"dtype":"int32","shape":["B","Sk"]}},"scalars":["s"],"lse":true)"),
            std::string::npos)
      << json;
  const KernelSpec back = parse_spec_text(json, "canonical.json").at(0);
  EXPECT_TRUE(back.mods == s.mods);
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(canonical_json(back), json);
  EXPECT_EQ(s.name.rfind("attn_fwd_f16_d128_causal_br_gqa_mods_", 0), 0u) << s.name;
  EXPECT_EQ(s.name.size(), std::string("attn_fwd_f16_d128_causal_br_gqa_mods_").size() + 8);
  EXPECT_NE(mods_id(s), 0u);
  EXPECT_EQ(mods_id(base()), 0u);
  KernelSpec other = s;
  other.mods.score_mod = "score + rel[q_idx - kv_idx + Sk - 1] * s * 2.0";
  EXPECT_NE(derived_name(other), derived_name(s));
  EXPECT_NE(mods_id(other), mods_id(s));
  EXPECT_NE(other, s);
}

// kv_dtype naming the spec's own dtype is the default: the same kernel, name and hash.
TEST(Canonical, KvDtypeOfTheSpecsOwnDtypeIsTheDefault) {
  const auto same = parse_spec_text(R"({"dtype": "float16", "head_dim": 128, "causal": "bottom_right",
      "kv_dtype": "float16"})", "same.json");
  EXPECT_EQ(same.at(0).kv_dtype, KvDType::as_dtype);
  EXPECT_EQ(canonical_json(same.at(0)), canonical_json(base()));
  const auto other = parse_spec_text(R"({"dtype": "bfloat16", "head_dim": 128, "kv_dtype": "float16"})", "o.json");
  EXPECT_EQ(other.at(0).kv_dtype, KvDType::float16);  // kept, so that the planner refuses it
}

TEST(Canonical, JsonIsIdenticalForEqualSpecsWrittenDifferently) {
  auto other = parse_spec_text(R"({"kernels": [{"comment": "same kernel, spelled out",
      "causal": "bottom_right", "head_dim_v": 128, "target": "apple9", "lse": true,
      "head_dim": 128, "dtype": "float16", "kind": "forward"}]})",
                               "other.json")[0];
  EXPECT_EQ(canonical_json(other), canonical_json(base()));
  EXPECT_EQ(spec_hash(other, "t1"), spec_hash(base(), "t1"));
}

TEST(Canonical, ParsingCanonicalJsonGivesTheSameSpec) {
  KernelSpec s = base();
  s.tiles = Tiles{32, 32, 4};
  s.name = "attn_tiled";
  auto back = parse_spec_text(canonical_json(s), "canonical.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(canonical_json(back[0]), canonical_json(s));
}

TEST(Canonical, JsonDiffersWhenAnyFieldDiffers) {
  const std::function<void(KernelSpec&)> changes[] = {
      [](KernelSpec& s) { s.kind = Kind::decode; },
      [](KernelSpec& s) { s.dtype = DType::bfloat16; },
      [](KernelSpec& s) { s.head_dim = 64; },
      [](KernelSpec& s) { s.head_dim_v = 64; },
      [](KernelSpec& s) { s.causal = Causal::top_left; },
      [](KernelSpec& s) { s.gqa = false; },
      [](KernelSpec& s) { s.mask = MaskKind::boolean; },
      [](KernelSpec& s) { s.window = true; },
      [](KernelSpec& s) { s.softcap = true; },
      [](KernelSpec& s) { s.alibi = true; },
      [](KernelSpec& s) { s.sinks = true; },
      [](KernelSpec& s) { s.layout = Layout::varlen; },
      [](KernelSpec& s) { s.kv_cache = KvCache::paged; },
      [](KernelSpec& s) { s.lse = false; },
      [](KernelSpec& s) { s.tiles = Tiles{32, 32, 4}; },
      [](KernelSpec& s) { s.target = Target::apple10; },
      [](KernelSpec& s) { s.name = "attn_other"; },
  };
  std::set<std::string> seen{canonical_json(base())};
  std::set<std::string> hashes{spec_hash(base(), "t1")};
  for (const auto& change : changes) {
    KernelSpec s = base();
    change(s);
    EXPECT_TRUE(seen.insert(canonical_json(s)).second) << canonical_json(s);
    EXPECT_TRUE(hashes.insert(spec_hash(s, "t1")).second) << canonical_json(s);
  }
}

TEST(Canonical, JsonIgnoresOrigin) {
  KernelSpec s = base();
  s.origin = {"elsewhere.json", "kernels[9]"};
  EXPECT_EQ(canonical_json(s), canonical_json(base()));
}

TEST(Canonical, HashIsSixteenHexDigitsAndDependsOnTemplateVersion) {
  std::string h1 = spec_hash(base(), "templates-1");
  std::string h2 = spec_hash(base(), "templates-2");
  EXPECT_EQ(h1.size(), 16u);
  EXPECT_EQ(h1.find_first_not_of("0123456789abcdef"), std::string::npos) << h1;
  EXPECT_EQ(h2.size(), 16u);
  EXPECT_NE(h1, h2);
  EXPECT_EQ(h1, spec_hash(base(), "templates-1"));
}

TEST(Canonical, HashIsFnv1aOfCanonicalJsonAndVersion) {
  // Pins the definition other tools may reimplement: recomputed here over
  // the documented input, canonical_json + "|" + template version.
  std::string input = canonical_json(base()) + "|v";
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : input) h = (h ^ c) * 0x100000001b3ull;
  char expected[17];
  std::snprintf(expected, sizeof expected, "%016llx", static_cast<unsigned long long>(h));
  EXPECT_EQ(spec_hash(base(), "v"), expected);
}

TEST(Canonical, DerivedNameCoversEverySuffix) {
  KernelSpec s = base();
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128_causal_br_gqa");
  s.gqa = false;
  s.causal = Causal::none;
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128");
  s.mask = MaskKind::additive;
  s.target = Target::apple7;
  EXPECT_EQ(derived_name(s), "attn_fwd_f16_d128_mask_add_apple7");
}

}  // namespace
}  // namespace mfagen::spec
