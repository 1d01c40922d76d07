// The planner's refusals: each request beyond the hardware limits (or not
// implemented yet) gets an exact message naming the file, JSON path, kernel
// and what to change; and the sizes it derives for valid requests.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "plan/dispatch_info.h"
#include "plan/kernel_plan.h"
#include "spec/spec_parser.h"

namespace mfagen::plan {
namespace {

// Plans every kernel of the file; returns the last plan.
KernelPlan plan_json(const std::string& json) {
  KernelPlan last;
  for (const spec::KernelSpec& s : spec::parse_spec_text(json, "p.json")) last = plan_kernel(s);
  return last;
}

struct Refusal {
  std::string json;
  std::string message;
};

void PrintTo(const Refusal& r, std::ostream* os) { *os << r.json; }

class PlanRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(PlanRefusal, NamesFilePathAndFix) {
  try {
    plan_json(GetParam().json);
    FAIL() << "planned without error: " << GetParam().json;
  } catch (const spec::SpecError& e) {
    EXPECT_EQ(std::string(e.what()), GetParam().message);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, PlanRefusal,
    ::testing::Values(
        Refusal{R"({"kernels": [{"dtype": "float32", "head_dim": 128, "tiles": {"block_q": 32, "block_k": 512, "simdgroups": 4}}]})",
                "p.json: kernels[0].tiles.block_k: attn_fwd_f32_d128_gqa_q32k512s4: block_k 512 needs 65536 bytes of "
                "threadgroup memory for a 32-column K/V tile of float32, over the 32768-byte limit; "
                "use block_k <= 256"},
        Refusal{R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 1024, "simdgroups": 4}})",
                "p.json: tiles.block_k: attn_fwd_f16_d64_gqa_q32k1024s4: block_k 1024 needs 65536 bytes of "
                "threadgroup memory for a 32-column K/V tile of float16, over the 32768-byte limit; "
                "use block_k <= 512"},
        Refusal{R"({"dtype": "float16", "head_dim": 576, "head_dim_v": 512, "tiles": {"block_q": 128, "block_k": 16, "simdgroups": 1}})",
                "p.json: tiles: attn_fwd_f16_d576_dv512_gqa_q128k16s1: head_dim 576 / head_dim_v 512 with block_q 128, "
                "block_k 16, simdgroups 1 keep 3264 32-bit registers of fragment values per thread (16 query row "
                "tiles per simdgroup), over the limit of 512; use more simdgroups, a smaller block_q or a "
                "smaller block_k"},
        Refusal{R"({"dtype": "float32", "head_dim": 256, "tiles": {"block_q": 64, "block_k": 64, "simdgroups": 2}})",
                "p.json: tiles: attn_fwd_f32_d256_gqa_q64k64s2: head_dim 256 / head_dim_v 256 with block_q 64, "
                "block_k 64, simdgroups 2 keep 576 32-bit registers of fragment values per thread (4 query row "
                "tiles per simdgroup), over the limit of 512; use more simdgroups, a smaller block_q or a "
                "smaller block_k"},
        Refusal{R"({"kernels": [{"dtype": "float16", "head_dim": 64}, {"kind": "backward", "dtype": "float16", "head_dim": 64, "lse": false}]})",
                "p.json: kernels[1].lse: attn_bwd_f16_d64_gqa_nolse: a backward kernel recomputes P from the "
                "forward's lse: lse must be true"},
        Refusal{R"({"kind": "backward", "dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 16, "simdgroups": 4}})",
                "p.json: tiles.block_k: attn_bwd_f16_d64_gqa_q32k16s4: block_k 16 must be a multiple of 8 x "
                "simdgroups = 32 (backward: each simdgroup owns whole 8-key tiles of dK and dV)"},
        Refusal{R"({"kind": "decode", "dtype": "float16", "head_dim": 64, "layout": "varlen"})",
                "p.json: layout: attn_decode_f16_d64_gqa_varlen: varlen packs sequences for prefill and training "
                "(kind forward or backward); a decode kernel takes dense queries (at most 16 per sequence): use "
                "layout dense"},
        Refusal{R"({"dtype": "float16", "head_dim": 64, "layout": "varlen", "mask": "bool"})",
                "p.json: layout: attn_fwd_f16_d64_gqa_mask_bool_varlen: a mask is a dense (B, Hq, Sq, Sk) tensor, "
                "which a packed batch of sequences of different lengths does not have: use mask none with layout "
                "varlen (causal and window apply per sequence)"},
        Refusal{R"({"kind": "backward", "dtype": "float16", "head_dim": 64, "kv_cache": "paged"})",
                "p.json: kv_cache: attn_bwd_f16_d64_gqa_paged: a paged cache serves inference (kind forward: "
                "prefill against the cache, or decode); the training backward takes dense k and v: use kv_cache "
                "dense"},
        Refusal{R"({"dtype": "bfloat16", "head_dim": 64, "kv_dtype": "float16"})",
                "p.json: kv_dtype: attn_fwd_bf16_d64_gqa_kv_float16: k and v are stored in the spec's dtype "
                "(bfloat16) unless quantized: use kv_dtype q8_0, q4_0 or fp8_e4m3, or leave the field out"},
        Refusal{R"({"kind": "backward", "dtype": "float16", "head_dim": 64, "kv_dtype": "q8_0"})",
                "p.json: kv_dtype: attn_bwd_f16_d64_gqa_kv_q8_0: a quantized cache serves inference (kind forward "
                "or decode); the training backward takes k and v in the spec's dtype and writes dK and dV there: "
                "leave kv_dtype out"},
        Refusal{R"({"kind": "decode", "dtype": "float16", "head_dim": 80, "kv_dtype": "q4_0"})",
                "p.json: kv_dtype: attn_decode_f16_d80_gqa_kv_q4_0: q4_0 stores blocks of 32 values along the head "
                "dim: head_dim (80) and head_dim_v (80) must be multiples of 32 (fp8_e4m3 takes any head dim)"},
        Refusal{R"({"kind": "decode", "dtype": "float16", "head_dim": 64, "dropout": true})",
                "p.json: dropout: attn_decode_f16_d64_gqa_dropout: dropout is a training feature (kind forward or "
                "backward on dense k and v); decode, paged and quantized caches serve inference: leave dropout out"},
        Refusal{R"({"kind": "backward", "dtype": "float16", "head_dim": 64, "layout": "varlen", "dropout": true})",
                "p.json: dropout: attn_bwd_f16_d64_gqa_varlen_dropout: dropout with packed sequences is not supported "
                "in this version (the mask's counter is per dense batch entry): use layout dense"},
        Refusal{R"({"kind": "decode", "dtype": "float16", "head_dim": 64, "tiles": {"block_q": 64, "block_k": 32, "simdgroups": 8, "key_groups": 2}})",
                "p.json: tiles.key_groups: attn_decode_f16_d64_gqa_q64k32s8g2: key_groups 2 splits the key blocks of "
                "the simdgroup_matrix forward with dense, unquantized K and V and no mask_mod; this decode kernel "
                "takes key_groups 1"},
        Refusal{R"({"dtype": "float16", "head_dim": 64, "kv_dtype": "q8_0", "tiles": {"block_q": 64, "block_k": 32, "simdgroups": 8, "key_groups": 2}})",
                "p.json: tiles.key_groups: attn_fwd_f16_d64_gqa_kv_q8_0_q64k32s8g2: key_groups 2 splits the key "
                "blocks of the simdgroup_matrix forward with dense, unquantized K and V and no mask_mod; this "
                "forward kernel takes key_groups 1"},
        Refusal{R"({"dtype": "float16", "head_dim": 8, "tiles": {"block_q": 64, "block_k": 8, "simdgroups": 32, "key_groups": 16}})",
                "p.json: tiles.key_groups: attn_fwd_f16_d8_gqa_q64k8s32g16: key_groups 16 with block_q 64, "
                "simdgroups 32 hand 61440 bytes of softmax state to group 0, over Metal's 32768 bytes of "
                "threadgroup memory; use fewer key groups or a smaller block_q"},
        Refusal{R"({"kind": "cache_append", "dtype": "float16", "head_dim": 64, "causal": "bottom_right"})",
                "p.json: causal: kv_append_f16_d64: causal is an attention feature; a cache_append kernel only writes "
                "new keys and values into the cache (leave the field out)"},
        Refusal{R"({"kind": "cache_append", "dtype": "float16", "head_dim": 48, "kv_dtype": "q8_0"})",
                "p.json: kv_dtype: kv_append_f16_d48_q8_0: q8_0 stores blocks of 32 values along the head dim: "
                "head_dim (48) and head_dim_v (48) must be multiples of 32"},
        Refusal{R"({"dtype": "float16", "head_dim": 64, "layout": "varlen", "mask_mod": "kv_idx < 8", "name": "m"})",
                "p.json: mask_mod: m: score_mod and mask_mod compile into kernels on dense queries in this version "
                "(layout dense; dense, paged and quantized caches with the forward and decode)"}));

// Two key groups of four simdgroups: each simdgroup has 64 / (8 x 4) = 2 row
// tiles, 2 x 32 keys are staged per step (K and V resident: 2 x 64 x 64 x 2
// bytes = 16 KB), and group 1 hands over 8 row tiles' max and total and O's 8
// column tiles (64 floats each: 4 x 64 x 8 x 9 = 18 KB, within the 20 KB that
// keeps three threadgroups resident): one merge pass.
TEST(Plan, KeyGroupsShareRowsAndMergeThroughTheTileMemory) {
  const KernelPlan p =
      plan_json(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 64, "block_k": 32, "simdgroups": 8, "key_groups": 2}})");
  EXPECT_EQ(p.key_groups, 2u);
  EXPECT_EQ(p.row_tiles, 2u);
  EXPECT_TRUE(p.resident_tiles);
  EXPECT_EQ(p.merge_tiles, 8u);
  EXPECT_EQ(p.threadgroup_bytes, 4u * 64 * 8 * 9);
  // bfloat16 at D 80, four groups of two: staged as float32, 64 keys x 80 x 4
  // bytes = 20 KB, the whole budget. Three groups hand over 2 x 2 row tiles
  // each (12 slots, 3 KB per column tile of O, and 3 KB of max and total):
  // five of the ten column tiles per pass, in 18 KB.
  const KernelPlan m =
      plan_json(R"({"dtype": "bfloat16", "head_dim": 80, "tiles": {"block_q": 32, "block_k": 16, "simdgroups": 8, "key_groups": 4}})");
  EXPECT_EQ(m.row_tiles, 2u);
  EXPECT_FALSE(m.resident_tiles);
  EXPECT_EQ(m.merge_tiles, 5u);
  EXPECT_EQ(m.threadgroup_bytes, 64u * 80 * 4);
}

TEST(Plan, LargeHeadDimsAreBlockedAlongD) {
  const KernelPlan p = plan_json(R"({"dtype": "float32", "head_dim": 576, "head_dim_v": 512})");
  EXPECT_EQ(p.block_k, 16u);
  // 576 columns of float32 in eight balanced passes of 16 x 72 x 4 = 4.5 KB:
  // two-simdgroup threadgroups keep 24 simdgroups resident within 60 KB.
  EXPECT_EQ(p.chunk, 72u);
  EXPECT_EQ(p.d_passes, 8u);
  EXPECT_EQ(p.dv_passes, 8u);
  EXPECT_EQ(p.threadgroup_bytes, 16u * 72 * 4);
  EXPECT_LE(p.threadgroup_bytes, kThreadgroupMemoryPerCore / (kSaturationSimdgroupsPerCore / p.simdgroups));
  EXPECT_LE(p.threadgroup_bytes, kMaxThreadgroupBytes);
}

// q8_0 and q4_0 caches are dequantized a 32-value block at a time: every K/V
// pass covers whole blocks, whatever the head dim and dtype.
TEST(Plan, QuantizedBlockPassesCoverWholeBlocks) {
  for (const char* kind : {"forward", "decode"})
    for (const char* dtype : {"float16", "float32"})
      for (uint32_t d : {32u, 96u, 160u, 256u, 512u}) {
        const KernelPlan p = plan_json(fmt::format(R"({{"kind": "{}", "dtype": "{}", "head_dim": {}, "kv_dtype": "q4_0"}})",
                                                   kind, dtype, d));
        EXPECT_EQ(p.chunk % 32, 0u) << kind << " " << dtype << " D " << d;
        EXPECT_LE(p.threadgroup_bytes, kMaxThreadgroupBytes);
      }
}

TEST(Plan, SmallHeadDimsArePaddedToWholeTiles) {
  const KernelPlan p = plan_json(R"({"dtype": "float16", "head_dim": 20, "head_dim_v": 44, "lse": false})");
  EXPECT_EQ(p.d_tiles, 3u);
  EXPECT_EQ(p.dv_tiles, 6u);
  EXPECT_EQ(p.chunk, 48u);
  EXPECT_EQ(p.d_passes, 1u);
  EXPECT_EQ(p.threads, 32u * p.simdgroups);
  ASSERT_EQ(p.buffers.size(), 5u);  // no lse buffer
  EXPECT_EQ(p.buffers.back().name, "params");
  EXPECT_EQ(p.buffers.back().index, kParamsIndex);
  EXPECT_TRUE(p.function_constants.empty());
}

TEST(Plan, ExplicitTilesAreKept) {
  const KernelPlan p = plan_json(R"({"dtype": "bfloat16", "head_dim": 80, "tiles": {"block_q": 64, "block_k": 16, "simdgroups": 2}})");
  EXPECT_FALSE(p.tiles_from_table);
  EXPECT_EQ(p.block_q, 64u);
  EXPECT_EQ(p.row_tiles, 4u);
  EXPECT_EQ(p.threads, 64u);
  // Per row tile and lane, two float32 registers per tile of q, O and the
  // scores: a bfloat16 forward stages K, and keeps q, widened to float32.
  EXPECT_EQ(p.fragment_registers, 4u * 2 * (10 + 10 + 2));
}

TEST(Plan, HalfQFragmentsTakeOneRegisterPerLane) {
  // D 256 at 64x16x8, one row tile: q's 32 tiles, O's 32 and two of scores.
  // Half q takes one register per tile and lane, so the kernel fits the 128
  // registers a thread has; float32 q takes two.
  const std::string tiles = R"("head_dim": 256, "tiles": {"block_q": 64, "block_k": 16, "simdgroups": 8}})";
  EXPECT_EQ(plan_json(R"({"dtype": "float16", )" + tiles).fragment_registers, 32u + 2 * (32 + 2));
  EXPECT_EQ(plan_json(R"({"dtype": "float32", )" + tiles).fragment_registers, 2u * (32 + 32 + 2));
  EXPECT_LE(plan_json(R"({"dtype": "float16", )" + tiles).fragment_registers, kRegistersPerThread);
}

}  // namespace
}  // namespace mfagen::plan

namespace mfagen::plan {
namespace {

// The planner's size of AttentionParams (recorded in the manifest) is what
// the runtime's dispatch packs, for every combination of features.
TEST(Plan, ParamsBytesMatchTheDispatchLayout) {
  for (spec::Kind kind : {spec::Kind::forward, spec::Kind::decode, spec::Kind::backward})
    for (spec::MaskKind mask : spec::kAllMaskKinds)
      for (int features = 0; features < 8; ++features) {
        spec::KernelSpec s;
        s.kind = kind;
        s.head_dim = s.head_dim_v = 64;
        s.mask = mask;
        s.window = features & 1;
        s.softcap = features & 2;
        s.alibi = features & 4;
        s.name = "k";
        ForwardCall call;
        call.shape = {1, 2, 1, 3, 40};
        call.strides = contiguous_bhsd(call.shape, 64, 64);
        if (s.softcap) call.softcap = 1;
        if (mask != spec::MaskKind::none) call.mask_strides = broadcast_strides({1, 1, 3, 40});
        EXPECT_EQ(plan_kernel(s).params_bytes, plan_forward(forward_kernel_info(plan_kernel(s)), call).params.size())
            << int(kind) << " " << int(mask) << " " << features;
        // Serving features: sinks add no field, a paged cache three, varlen two.
        if (kind != spec::Kind::backward) {
          spec::KernelSpec with_cache = s;
          with_cache.kv_cache = spec::KvCache::paged;
          ForwardCall paged_call = call;
          paged_call.page_size = paged_call.num_pages = 16;
          paged_call.max_pages = 4;
          paged_call.strides = paged_kv(call.shape, 16, 64, 64);
          EXPECT_EQ(plan_kernel(with_cache).params_bytes,
                    plan_forward(forward_kernel_info(plan_kernel(with_cache)), paged_call).params.size());
        }
        if (mask != spec::MaskKind::none || kind == spec::Kind::decode) continue;
        s.sinks = true;
        s.layout = spec::Layout::varlen;
        call.total_q = 3;
        call.total_k = 40;
        EXPECT_EQ(plan_kernel(s).params_bytes, plan_forward(forward_kernel_info(plan_kernel(s)), call).params.size())
            << int(kind) << " varlen " << features;
        if (kind != spec::Kind::forward) continue;
        // Packed queries on a paged cache: both layouts' fields, and no cu_seqlens_k (no packed keys).
        s.kv_cache = spec::KvCache::paged;
        ForwardCall serving = call;
        serving.total_k = 0;
        serving.page_size = serving.num_pages = 16;
        serving.max_pages = 4;
        serving.strides = packed_paged(call.shape, 3, 16, 64, 64);
        const DispatchPlan step = plan_forward(forward_kernel_info(plan_kernel(s)), serving);
        EXPECT_EQ(plan_kernel(s).params_bytes, step.params.size()) << "varlen paged " << features;
        EXPECT_NE(step.buffer("cu_seqlens_q"), nullptr);
        EXPECT_EQ(step.buffer("cu_seqlens_k"), nullptr);
        EXPECT_NE(step.buffer("block_table"), nullptr);
        serving.total_k = 40;
        EXPECT_THROW(plan_forward(forward_kernel_info(plan_kernel(s)), serving), DispatchError);
      }
}

}  // namespace
}  // namespace mfagen::plan
