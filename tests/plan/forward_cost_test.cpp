// The cost model against counts worked out by hand.
#include <gtest/gtest.h>

#include "plan/forward_cost.h"

namespace mfagen::plan {
namespace {

KernelPlan plan_with(spec::Causal causal, uint32_t d = 128) {
  spec::KernelSpec s;
  s.dtype = spec::DType::float16;
  s.head_dim = s.head_dim_v = d;
  s.causal = causal;
  s.tiles = spec::Tiles{32, 32, 4};
  s.name = "k";
  return plan_kernel(s);
}

TEST(ForwardCost, NoMaskingVisitsEveryBlock) {
  const ForwardCost c = forward_cost(plan_with(spec::Causal::none), {1, 2, 1, 1024, 1024});
  EXPECT_EQ(c.threadgroups, 32u * 2);
  EXPECT_EQ(c.key_blocks_total, 32u * 32 * 2);
  EXPECT_EQ(c.key_blocks_visited, c.key_blocks_total);
  EXPECT_DOUBLE_EQ(c.visible_pairs, 2.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 1024 * 1024 * 256);
  // q, out: 2 heads x 1024 x 128 x 2 bytes each; lse 2 x 1024 x 4; k, v: 1 head.
  EXPECT_EQ(c.min_device_bytes, 2u * 1024 * 128 * 2 * 2 + 2 * 1024 * 4 + 1024 * 256 * 2);
  // K and V re-read by each of the 32 query blocks of both heads.
  EXPECT_EQ(c.kernel_device_bytes, 2u * 1024 * 128 * 2 * 2 + 2 * 1024 * 4 + 64ull * 1024 * 256 * 2);
}

TEST(ForwardCost, CausalSkipsTheHiddenTriangle) {
  const ForwardCost c = forward_cost(plan_with(spec::Causal::top_left), {1, 1, 1, 1024, 1024});
  EXPECT_EQ(c.key_blocks_visited, 528u);  // query block b visits b + 1 key blocks: 1 + ... + 32
  EXPECT_EQ(c.key_blocks_total, 1024u);
  EXPECT_DOUBLE_EQ(c.visible_pairs, 1024.0 * 1025 / 2);
}

TEST(ForwardCost, BottomRightWithMoreQueriesThanKeysHidesLeadingRows) {
  const ForwardCost c = forward_cost(plan_with(spec::Causal::bottom_right), {1, 1, 1, 100, 10});
  // Row i sees keys 0 .. i - 90: rows 0..89 see none, rows 90..99 see 1..10.
  EXPECT_DOUBLE_EQ(c.visible_pairs, 55.0);
  // Query blocks 0..31 and 32..63 see no key; 64..95 (row 95 sees keys 0..5) and 96..99 visit one block each.
  EXPECT_EQ(c.key_blocks_visited, 2u);
}

}  // namespace
}  // namespace mfagen::plan

namespace mfagen::plan {
namespace {

TEST(ForwardCost, SlidingWindowVisitsABandOfBlocks) {
  spec::KernelSpec s;
  s.dtype = spec::DType::float16;
  s.head_dim = s.head_dim_v = 64;
  s.window = true;
  s.tiles = spec::Tiles{32, 32, 4};
  s.name = "k";
  CostShape shape{1, 1, 1, 1024, 1024};
  shape.window_left = 64;
  shape.window_right = 0;
  const ForwardCost c = forward_cost(plan_kernel(s), shape);
  // Query block b (rows 32b..32b+31) sees keys [32b - 64, 32b + 32): 1, 2, then 3 blocks.
  EXPECT_EQ(c.key_blocks_visited, 1u + 2 + 30 * 3);
  // Row i sees min(i, 64) + 1 keys.
  EXPECT_DOUBLE_EQ(c.visible_pairs, 64.0 * 65 / 2 + 65.0 * (1024 - 64));
}

}  // namespace
}  // namespace mfagen::plan
