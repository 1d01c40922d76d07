// The tile table: every head dim, dtype and target it can be asked for plans
// within the limits, and families differ as DESIGN.md section 4 says.
#include <gtest/gtest.h>

#include "plan/kernel_plan.h"

namespace mfagen::plan {
namespace {

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
        ASSERT_LE(p.fragment_floats, kMaxFragmentFloatsPerThread) << d;
        ASSERT_EQ(p.block_q % (8 * p.simdgroups), 0u) << d;
        ASSERT_GE(p.chunk * p.d_passes, d) << d;
        ASSERT_TRUE(p.tiles_from_table);
      }
}

TEST(TileTable, FixedRegisterFamiliesTakeLargerQueryBlocks) {
  for (uint32_t d : {64u, 128u}) {
    const spec::Tiles m1 = table_tiles(d, d, spec::DType::float16, spec::Target::apple7);
    const spec::Tiles m3 = table_tiles(d, d, spec::DType::float16, spec::Target::apple9);
    EXPECT_GT(m1.block_q, m3.block_q) << d;
    EXPECT_EQ(table_tiles(d, d, spec::DType::float16, spec::Target::apple8), m1);
    EXPECT_EQ(table_tiles(d, d, spec::DType::float16, spec::Target::apple10), m3);
  }
}

TEST(TileTable, LargeHeadDimsTakeFewerKeysPerStep) {
  EXPECT_GT(table_tiles(64, 64, spec::DType::float16, spec::Target::apple9).block_k,
            table_tiles(256, 256, spec::DType::float16, spec::Target::apple9).block_k);
  EXPECT_EQ(table_tiles(576, 512, spec::DType::float16, spec::Target::apple9), (spec::Tiles{16, 16, 2}));
}

}  // namespace
}  // namespace mfagen::plan
