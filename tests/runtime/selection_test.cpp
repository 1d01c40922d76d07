// Selection over a spec set with overlapping kernels: which kernel each call
// shape gets, and what a call nothing covers is told.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

using ::testing::HasSubstr;

constexpr const char* kSet = R"({"kernels": [
  {"dtype": "float16", "head_dim": 128, "causal": ["none", "bottom_right"]},
  {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "gqa": false},
  {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "lse": false},
  {"kind": "decode", "dtype": "float16", "head_dim": 128, "causal": "bottom_right"},
  {"dtype": "bfloat16", "head_dim": 64, "mask": "bool"},
  {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "window": true},
  {"kind": "backward", "dtype": "float16", "head_dim": 128, "causal": "bottom_right"}
]})";

AttentionQuery query(uint64_t sq, uint64_t hq = 32, uint64_t hkv = 8) {
  AttentionQuery q;
  q.dtype = ElementType::float16;
  q.head_dim = q.head_dim_v = 128;
  q.causal = CausalMode::bottom_right;
  q.need_lse = true;
  q.shape = {1, hq, hkv, sq, 4096};
  return q;
}

struct Row {
  const char* what;
  AttentionQuery q;
  const char* expected;
};

TEST(Selection, EachShapeGetsTheMostSpecificKernel) {
  const Library library = Library::load_from_memory(test::manifest_for(kSet));
  ASSERT_EQ(library.kernels().size(), 8u);
  std::vector<Row> rows;
  rows.push_back({"prefill, GQA", query(4096), "attn_fwd_f16_d128_causal_br_gqa"});
  rows.push_back({"decode range: Sq <= 16 prefers the decode kernel", query(1), "attn_decode_f16_d128_causal_br_gqa"});
  rows.push_back({"Sq = 16 still decode", query(16), "attn_decode_f16_d128_causal_br_gqa"});
  rows.push_back({"Sq = 17 is prefill", query(17), "attn_fwd_f16_d128_causal_br_gqa"});
  rows.push_back({"multi-head: the kernel without GQA", query(4096, 8, 8), "attn_fwd_f16_d128_causal_br"});
  {
    AttentionQuery q = query(4096);
    q.need_lse = false;
    rows.push_back({"no lse needed: the kernel that writes none", q, "attn_fwd_f16_d128_causal_br_gqa_nolse"});
  }
  {
    AttentionQuery q = query(4096);
    q.causal = CausalMode::none;
    rows.push_back({"not causal", q, "attn_fwd_f16_d128_gqa"});
  }
  {
    AttentionQuery q = query(4096);
    q.window = true;
    rows.push_back({"window", q, "attn_fwd_f16_d128_causal_br_gqa_window"});
  }
  {
    AttentionQuery q = query(4096);
    q.kind = KernelKind::backward;
    rows.push_back({"backward", q, "attn_bwd_f16_d128_causal_br_gqa"});
  }
  {
    AttentionQuery q = query(7, 4, 4);
    q.dtype = ElementType::bfloat16;
    q.head_dim = q.head_dim_v = 64;
    q.causal = CausalMode::none;
    q.mask = MaskInput::boolean;
    rows.push_back({"bool mask", q, "attn_fwd_bf16_d64_gqa_mask_bool"});
  }
  for (const Row& r : rows) {
    const KernelEntry* k = library.find(r.q);
    ASSERT_NE(k, nullptr) << r.what;
    EXPECT_EQ(k->name, r.expected) << r.what;
  }
}

TEST(Selection, UncoveredCallsSayWhatWasAskedAndWhatIsClosest) {
  const Library library = Library::load_from_memory(test::manifest_for(kSet));
  AttentionQuery q = query(4096);
  q.head_dim = q.head_dim_v = 96;
  EXPECT_EQ(library.find(q), nullptr);
  try {
    library.select(q);
    FAIL();
  } catch (const SelectionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no kernel for forward float16, D 96, Dv 96, causal bottom_right, 32 q heads "
                                    "over 8, seq_q 4096, lse; closest:\n  attn_fwd_f16_d128_causal_br_gqa"));
  }
  AttentionQuery masked = query(4096);
  masked.mask = MaskInput::additive;
  EXPECT_THROW(library.select(masked), SelectionError);  // a mask the kernels do not take
  AttentionQuery window_missing = query(4096);
  window_missing.softcap = true;
  EXPECT_EQ(library.find(window_missing), nullptr);
}

// The rule of library.h written as a plain scan: every fitting kernel scored,
// the highest first, ties to manifest order. find() (a hash index) must agree.
const KernelEntry* reference_find(const Library& library, const AttentionQuery& q, const DeviceCapabilities& device) {
  const KernelEntry* best = nullptr;
  int best_score = -1;
  for (const KernelEntry& k : library.kernels()) {
    const ForwardKernelInfo& i = k.info;
    const bool kind_ok = q.kind == KernelKind::backward
                             ? k.kind == KernelKind::backward
                             : k.kind != KernelKind::backward && (k.kind != KernelKind::decode || q.shape.seq_q <= 16);
    if (!kind_ok || k.dtype != q.dtype || i.head_dim != q.head_dim || i.head_dim_v != q.head_dim_v ||
        k.causal != q.causal || i.mask != q.mask || i.window != q.window || i.softcap != q.softcap ||
        i.alibi != q.alibi || i.sinks != q.sinks || i.varlen != q.varlen || i.paged != q.paged ||
        i.kv_format != q.kv_format || (!i.gqa && q.shape.heads_q != q.shape.heads_kv) || (!i.lse && q.need_lse))
      continue;
    const KernelRequirements& r = k.requirements;
    if (device.metal < r.metal || device.gpu_family < r.gpu_family || (r.tensor_ops && !device.tensor_ops)) continue;
    const int score = 8 * (k.kind == KernelKind::decode) + 4 * !i.gqa + 2 * (!i.lse && !q.need_lse) + r.tensor_ops;
    if (score > best_score) best = &k, best_score = score;
  }
  return best;
}

TEST(Selection, HashIndexAgreesWithTheRuleOnALargeOverlappingSet) {
  // 2 x 3 x 3 x 2 x 2 x 2 forward/decode kernels, plus duplicates (manifest
  // order decides), backward kernels and TensorOps kernels (forward kernels of
  // target apple10) with and without their simdgroup_matrix twins: 339 kernels.
  const Library library = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"kind": ["forward", "decode"], "dtype": ["float16", "float32"], "head_dim": [64, 96, 128],
     "causal": ["none", "top_left", "bottom_right"], "gqa": [true, false], "lse": [true, false], "window": [false, true]},
    {"kind": "backward", "dtype": ["float16", "float32"], "head_dim": [64, 128], "causal": ["none", "bottom_right"]},
    {"name": "dup_fwd", "dtype": "float16", "head_dim": 64},
    {"name": "dup_decode_nolse", "kind": "decode", "dtype": "float16", "head_dim": 64, "lse": false},
    {"kind": ["forward", "decode", "backward"], "dtype": "float16", "head_dim": 64, "sinks": true},
    {"kind": ["forward", "backward"], "dtype": "float16", "head_dim": 64, "layout": "varlen"},
    {"kind": ["forward", "decode"], "dtype": "float16", "head_dim": 64, "kv_cache": "paged"},
    {"kind": ["forward", "decode"], "dtype": "float16", "head_dim": 64, "kv_cache": ["dense", "paged"],
     "kv_dtype": ["q8_0", "fp8_e4m3"]},
    {"kind": ["forward", "decode", "backward"], "dtype": ["float16", "float32"], "head_dim": [64, 96],
     "causal": "top_left", "target": "apple10"},
    {"dtype": "float32", "head_dim": 80, "causal": ["none", "top_left"], "lse": false, "target": ["apple9", "apple10"]},
    {"dtype": "float16", "head_dim": 96, "causal": ["none", "bottom_right"], "window": true, "target": "apple10"},
    {"dtype": ["float16", "float32"], "head_dim": [64, 128], "causal": ["none", "bottom_right"], "target": "apple10"}]})"));
  ASSERT_EQ(library.kernels().size(), 339u);
  std::mt19937_64 rng(3);
  auto pick = [&](std::initializer_list<uint64_t> v) { return *(v.begin() + rng() % v.size()); };
  // Devices: the M5 cpu backend, an M5 without TensorOps (macOS 15), an M4 on macOS 26, the baseline.
  const std::array<DeviceCapabilities, 4> devices = {DeviceCapabilities::all(),
                                                     DeviceCapabilities{MetalVersion::v3_2, GpuFamily::apple10, false},
                                                     DeviceCapabilities{MetalVersion::v4_0, GpuFamily::apple9, true},
                                                     DeviceCapabilities{}};
  int found = 0, missing = 0, tensor_ops = 0, fallbacks = 0;
  for (int i = 0; i < 20000; ++i) {
    AttentionQuery q;
    q.kind = pick({0, 0, 0, 2}) == 2 ? KernelKind::backward : KernelKind::forward;
    q.dtype = ElementType(pick({0, 1, 2}));
    q.head_dim = uint32_t(pick({64, 96, 128, 80}));
    q.head_dim_v = rng() % 10 ? q.head_dim : 64;
    q.causal = CausalMode(pick({0, 1, 2}));
    q.window = rng() % 3 == 0;
    q.mask = rng() % 10 ? MaskInput::none : MaskInput::boolean;
    const uint64_t serving = rng() % 16;  // now and then one serving feature (DESIGN.md section 13)
    q.sinks = serving == 0;
    q.varlen = serving == 1;
    q.paged = serving == 2 || serving == 3;
    if (serving == 3 || serving == 4) q.kv_format = rng() % 2 ? KvFormat::q8_0 : KvFormat::q4_0;  // q4_0: no kernel
    q.need_lse = rng() % 2;
    const uint64_t hkv = pick({1, 8});
    q.shape = {1, hkv * pick({1, 1, 4}), hkv, pick({1, 15, 16, 17, 4096}), 4096};
    const DeviceCapabilities& device = devices[rng() % devices.size()];
    const KernelEntry* expected = reference_find(library, q, device);
    ASSERT_EQ(library.find(q, device), expected) << "query " << i;
    (expected ? found : missing)++;
    tensor_ops += expected && expected->requirements.tensor_ops;
    const KernelEntry* best = reference_find(library, q, DeviceCapabilities::all());
    fallbacks += expected && best && best != expected && best->requirements.tensor_ops;
  }
  EXPECT_GT(found, 4500);  // both outcomes are common, so both are compared often
  EXPECT_GT(missing, 1000);
  EXPECT_GT(tensor_ops, 40);  // TensorOps kernels taken, and their twins taken instead on other devices
  EXPECT_GT(fallbacks, 100);
}

TEST(Selection, DuplicatesGoToManifestOrderAndEmptyLibrariesFindNothing) {
  const Library library = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"name": "first", "dtype": "float16", "head_dim": 64},
    {"name": "second", "dtype": "float16", "head_dim": 64},
    {"name": "first_decode", "kind": "decode", "dtype": "float16", "head_dim": 64},
    {"name": "second_decode", "kind": "decode", "dtype": "float16", "head_dim": 64}]})"));
  AttentionQuery q;
  q.head_dim = q.head_dim_v = 64;
  q.shape = {1, 4, 4, 100, 100};
  EXPECT_EQ(library.select(q).name, "first");
  q.shape.seq_q = 2;
  EXPECT_EQ(library.select(q).name, "first_decode");
  q.head_dim = 1u << 20;  // beyond any kernel: nothing, not a wrapped key
  EXPECT_EQ(library.find(q), nullptr);

  const Library empty = Library::load_from_memory(R"({"format": 1, "kernels": []})");
  EXPECT_EQ(empty.find(q), nullptr);
  EXPECT_EQ(Library().find(q), nullptr);
  try {
    empty.select(q);
    FAIL();
  } catch (const SelectionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("; the library has no kernels"));
  }
}

// score_mod / mask_mod kernels (DESIGN.md section 13) serve only calls that
// name their expressions (mods_id); calls without expressions, or with other
// ones, never get them, and a miss says why.
TEST(Selection, ScoreFunctionKernelsServeOnlyTheirExpressions) {
  const Library library = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": "float16", "head_dim": 128, "causal": "bottom_right"},
    {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "mask_mod": ["q_idx >= kv_idx", "kv_idx < 64"]},
    {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "score_mod": "score * s", "scalars": ["s"]}]})"));
  ASSERT_EQ(library.kernels().size(), 4u);
  const KernelEntry &plain = library.kernels()[0], &first = library.kernels()[1], &second = library.kernels()[2],
                    &scaled = library.kernels()[3];
  EXPECT_EQ(plain.info.mods_id, 0u);
  EXPECT_TRUE(first.info.mask_mod && !first.info.score_mod);
  EXPECT_TRUE(scaled.info.score_mod && !scaled.info.mask_mod);
  EXPECT_EQ(scaled.info.mod_scalars, 1u);
  EXPECT_NE(first.info.mods_id, second.info.mods_id);
  AttentionQuery q = query(4096);
  EXPECT_EQ(library.find(q), &plain);
  for (const KernelEntry* k : {&first, &second, &scaled}) {
    q.mods_id = k->info.mods_id;
    EXPECT_EQ(library.find(q), k) << k->name;
  }
  q.mods_id = first.info.mods_id ^ 1;
  EXPECT_EQ(library.find(q), nullptr);
  try {
    library.select(q);
    ADD_FAILURE() << "no error";
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("score_mod/mask_mod"), std::string::npos) << e.what();
  }
}

TEST(Selection, BadManifestsAreErrors) {
  EXPECT_THROW(Library::load_from_memory("{"), ManifestError);
  EXPECT_THROW(Library::load_from_memory(R"({"format": 2, "kernels": []})"), ManifestError);
  EXPECT_THROW(Library::load("/nonexistent/manifest.json"), ManifestError);
}

}  // namespace
}  // namespace mfagen
