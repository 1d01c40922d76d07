// The tile table: every head dim, dtype and target it can be asked for plans
// within the limits, and families differ as DESIGN.md section 4 says.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "plan/kernel_plan.h"
#include "spec/spec_parser.h"

namespace mfagen::plan {
namespace {

// The table's tiles for a kernel of this kind, head dim (D = Dv), dtype, target and causal mode.
spec::Tiles tiles_for(spec::Kind kind, uint32_t d, spec::DType dtype, spec::Target target,
                      spec::Causal causal = spec::Causal::none) {
  spec::KernelSpec s;
  s.kind = kind;
  s.head_dim = s.head_dim_v = d;
  s.dtype = dtype;
  s.target = target;
  s.causal = causal;
  return table_tiles(s);
}

TEST(TileTable, EveryHeadDimDtypeAndTargetPlansWithinLimits) {
  for (spec::Target target : spec::kAllTargets)
    for (spec::DType dtype : spec::kAllDTypes)
      for (uint32_t d = 1; d <= 576; ++d) {
        spec::KernelSpec s;
        s.dtype = dtype;
        s.head_dim = d;
        s.head_dim_v = std::min(d, 512u);
        s.target = target;
        s.name = "k";
        const KernelPlan p = plan_kernel(s);
        ASSERT_LE(p.threadgroup_bytes, kMaxThreadgroupBytes) << d;
        ASSERT_LE(p.threads, kMaxThreadsPerThreadgroup) << d;
        ASSERT_LE(p.fragment_registers, kMaxFragmentRegistersPerThread) << d;
        ASSERT_EQ(p.block_q % (8 * p.simdgroups), 0u) << d;
        ASSERT_GE(p.chunk * p.d_passes, d) << d;
        ASSERT_TRUE(p.tiles_from_table);
      }
}

TEST(TileTable, ForwardRowsAreTheSameOnEverySimdgroupMatrixFamily) {
  // The planner fits K/V passes to the staged element size, so the family
  // does not change a row; bfloat16 and float32 (q in float32) share rows,
  // and float16 has rows of its own where q's half fragments leave room for
  // more row tiles or keys (docs/kernel_speed.md).
  for (uint32_t d : {64u, 96u, 128u, 256u})
    for (spec::DType dt : spec::kAllDTypes) {
      const spec::Tiles m1 = tiles_for(spec::Kind::forward, d, dt, spec::Target::apple7);
      for (spec::Target t : {spec::Target::apple8, spec::Target::apple9})
        EXPECT_EQ(tiles_for(spec::Kind::forward, d, dt, t), m1) << d;
      if (dt == spec::DType::float32)
        EXPECT_EQ(m1, tiles_for(spec::Kind::forward, d, spec::DType::bfloat16, spec::Target::apple7)) << d;
    }
  const auto f16 = [](uint32_t d) {
    return tiles_for(spec::Kind::forward, d, spec::DType::float16, spec::Target::apple9);
  };
  const auto bf16 = [](uint32_t d) {
    return tiles_for(spec::Kind::forward, d, spec::DType::bfloat16, spec::Target::apple9);
  };
  EXPECT_EQ(f16(64), bf16(64));
  EXPECT_EQ(f16(128), (spec::Tiles{64, 32, 8, 2}));
  EXPECT_EQ(bf16(128), (spec::Tiles{64, 64, 8}));
  EXPECT_EQ(f16(256), (spec::Tiles{64, 64, 8}));
  EXPECT_EQ(bf16(256), (spec::Tiles{64, 16, 8}));
}

TEST(TileTable, CausalForwardRowsServeBothDiagonalsOnly) {
  // Causal D 64 stages 64 keys (two groups of 32), where the unmasked
  // forward stages 128: fewer keys checked one by one in each diagonal block.
  for (spec::DType dt : spec::kAllDTypes)
    for (spec::Causal c : {spec::Causal::top_left, spec::Causal::bottom_right}) {
      EXPECT_EQ(tiles_for(spec::Kind::forward, 64, dt, spec::Target::apple9, c), (spec::Tiles{64, 32, 8, 2}));
      EXPECT_EQ(tiles_for(spec::Kind::forward, 64, dt, spec::Target::apple9), (spec::Tiles{64, 64, 8, 2}));
      // Other kinds and head dims keep their rows.
      EXPECT_EQ(tiles_for(spec::Kind::forward, 128, dt, spec::Target::apple9, c),
                tiles_for(spec::Kind::forward, 128, dt, spec::Target::apple9));
      EXPECT_EQ(tiles_for(spec::Kind::backward, 64, dt, spec::Target::apple9, c),
                tiles_for(spec::Kind::backward, 64, dt, spec::Target::apple9));
    }
}

TEST(TileTable, KernelsThatCannotSplitKeyBlocksTakeTheNextRowWithoutKeyGroups) {
  // Paged and quantized caches and mask_mod skip the rows with key groups
  // (D 64 causal and not, D 80, float16 to D 128) for the general D 128 row.
  for (const char* extra : {R"("kv_cache": "paged")", R"("kv_dtype": "fp8_e4m3")", R"("mask_mod": "kv_idx < 8")"})
    for (const char* dtype : {"float16", "bfloat16"})
      for (uint32_t d : {64u, 80u, 128u})
        for (const char* causal : {"none", "bottom_right"}) {
          const std::string spec = fmt::format(R"({{"dtype": "{}", "head_dim": {}, "causal": "{}", {}}})", dtype, d,
                                               causal, extra);
          const KernelPlan p = plan_kernel(spec::parse_spec_text(spec, "t.json").front());
          EXPECT_EQ(p.key_groups, 1u) << spec;
          EXPECT_EQ(p.block_k, 64u) << spec;
          EXPECT_EQ(p.block_q, 64u) << spec;
        }
}

TEST(TileTable, Float16ForwardRowsKeepFragmentsWithinTheRegisters) {
  // The float16 rows exist because half q fits: every table-tiled float16
  // forward up to D 256 keeps its fragments within a thread's 128 registers.
  for (uint32_t d = 1; d <= 256; ++d) {
    spec::KernelSpec s;
    s.name = "k";
    s.dtype = spec::DType::float16;
    s.head_dim = s.head_dim_v = d;
    EXPECT_LE(plan_kernel(s).fragment_registers, kRegistersPerThread) << d;
  }
}

TEST(TileTable, Apple10ForwardRowsAreTensorOpsTiles) {
  // apple10's forward kernels run on TensorOps (matmul2d) and have rows of
  // their own: whole 16-row fragments (MLX NAX's height) per simdgroup.
  for (uint32_t d : {64u, 128u, 256u, 576u}) {
    const spec::Tiles t = tiles_for(spec::Kind::forward, d, spec::DType::float16, spec::Target::apple10);
    EXPECT_EQ(t.block_q % (16 * t.simdgroups), 0u) << d;
    EXPECT_NE(t, tiles_for(spec::Kind::forward, d, spec::DType::float16, spec::Target::apple9)) << d;
  }
}

TEST(TileTable, EveryHeadDimOfEveryKindHasAPlannableRow) {
  // The table is data (tile_table.json): every head dim the spec allows must
  // find a row, and the row must plan, for every kind.
  for (uint32_t d = 1; d <= 576; ++d) {
    spec::KernelSpec s;
    s.dtype = spec::DType::float16;
    s.head_dim = s.head_dim_v = d;
    s.name = "t";
    for (spec::Kind kind : spec::kAllKinds) {
      s.kind = kind;
      s.lse = true;
      ASSERT_NO_THROW(plan_kernel(s)) << spec::to_string(kind) << " D " << d;
    }
    // apple10's TensorOps forward rows, in every dtype (float32 tiles are twice as large).
    s.kind = spec::Kind::forward;
    s.target = spec::Target::apple10;
    for (spec::DType t : {spec::DType::float16, spec::DType::bfloat16, spec::DType::float32}) {
      s.dtype = t;
      ASSERT_NO_THROW(plan_kernel(s)) << "apple10 forward " << spec::to_string(t) << " D " << d;
    }
    s.dtype = spec::DType::float16;
    s.target = spec::Target::apple9;
  }
}

// A decode call runs 1 to `simdgroups` simdgroups, as many 8-row tiles as its
// rows need, so each simdgroup owns one tile and threadgroup memory is sized
// as for a one-simdgroup kernel (the single-query case).
TEST(TileTable, DecodeSimdgroupsOwnOneTileAndMemoryIsSizedForOne) {
  for (uint32_t d : {64u, 128u, 256u, 576u}) {
    const spec::Tiles t = tiles_for(spec::Kind::decode, d, spec::DType::float16, spec::Target::apple9);
    EXPECT_EQ(t.block_q, 8u * t.simdgroups) << d;
    spec::KernelSpec s;
    s.name = "decode";
    s.kind = spec::Kind::decode;
    s.head_dim = s.head_dim_v = d;
    const KernelPlan p = plan_kernel(s);
    EXPECT_EQ(p.row_tiles, 1u) << d;
    s.tiles = spec::Tiles{8, t.block_k, 1};
    const KernelPlan one = plan_kernel(s);
    EXPECT_EQ(p.chunk, one.chunk) << d;
    EXPECT_EQ(p.threadgroup_bytes, one.threadgroup_bytes) << d;
  }
}

TEST(TileTable, LargeHeadDimsTakeFewerKeysPerStep) {
  // Keys staged per step: block_k for each of the key groups.
  for (spec::DType dt : spec::kAllDTypes) {
    const spec::Tiles d64 = tiles_for(spec::Kind::forward, 64, dt, spec::Target::apple9);
    const spec::Tiles d256 = tiles_for(spec::Kind::forward, 256, dt, spec::Target::apple9);
    EXPECT_GT(d64.block_k * d64.key_groups, d256.block_k * d256.key_groups) << spec::to_string(dt);
  }
  EXPECT_EQ(tiles_for(spec::Kind::forward, 576, spec::DType::float16, spec::Target::apple9), (spec::Tiles{16, 16, 2}));
}

}  // namespace
}  // namespace mfagen::plan
