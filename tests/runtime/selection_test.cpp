// Selection over a spec set with overlapping kernels: which kernel each call
// shape gets, and what a call nothing covers is told.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

TEST(Selection, BadManifestsAreErrors) {
  EXPECT_THROW(Library::load_from_memory("{"), ManifestError);
  EXPECT_THROW(Library::load_from_memory(R"({"format": 2, "kernels": []})"), ManifestError);
  EXPECT_THROW(Library::load("/nonexistent/manifest.json"), ManifestError);
}

}  // namespace
}  // namespace mfagen
