// `mfagen tune`'s search (generator/profile/tune.h): every candidate is a
// row the planner accepts, each is predicted exactly as `mfagen profile`
// predicts it, and the ranking orders them by the summed prediction.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/kernel_plan.h"
#include "profile/chip_selection.h"
#include "profile/spec_profile.h"
#include "profile/tune.h"

namespace mfagen::profile {
namespace {

spec::KernelSpec small_forward() {
  spec::KernelSpec s;
  s.kind = spec::Kind::forward;
  s.dtype = spec::DType::float16;
  s.head_dim = s.head_dim_v = 32;
  s.causal = spec::Causal::bottom_right;
  s.gqa = true;
  s.name = "tuned";
  return s;
}

TEST(Tune, CandidatesAreTheGridRowsThePlannerAccepts) {
  const TuneGrid grid{{8, 16, 32}, {16, 32}, {1, 2, 4}};
  uint32_t refused = 0;
  const std::vector<spec::Tiles> rows = tile_candidates(small_forward(), grid, &refused);
  EXPECT_EQ(rows.size() + refused, 3u * 2 * 3);
  for (const spec::Tiles& t : rows) EXPECT_EQ(t.block_q % (8 * t.simdgroups), 0u);  // the planner's rule
  // 8 query rows cannot be shared by two or four simdgroups of 8-row tiles.
  EXPECT_EQ(std::count(rows.begin(), rows.end(), spec::Tiles{8, 16, 2}), 0);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), spec::Tiles{32, 32, 4}), 1);
}

// Key groups are one more axis of the grid: a row must give each group's
// simdgroups whole 8-row tiles, and only kernels that can split key blocks
// take more than one (a decode kernel refuses them all).
TEST(Tune, KeyGroupsAreAnAxisOfTheGrid) {
  TuneGrid grid{{32, 64}, {32}, {4, 8}};
  grid.key_groups = {1, 2, 4};
  uint32_t refused = 0;
  const std::vector<spec::Tiles> rows = tile_candidates(small_forward(), grid, &refused);
  EXPECT_EQ(rows.size() + refused, 2u * 1 * 2 * 3);
  for (const spec::Tiles& t : rows) EXPECT_EQ(t.block_q % (8 * t.simdgroups / t.key_groups), 0u);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), spec::Tiles{64, 32, 8, 2}), 1);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), spec::Tiles{32, 32, 8, 1}), 0);  // 8 x 8 rows > 32
  spec::KernelSpec decode = small_forward();
  decode.kind = spec::Kind::decode;
  for (const spec::Tiles& t : tile_candidates(decode, grid, nullptr)) EXPECT_EQ(t.key_groups, 1u);
}

TEST(Tune, RanksCandidatesByTheirPredictedTimeSummedOverChips) {
  const TuneGrid grid{{16, 32}, {16, 32}, {1, 2}};
  const plan::CostShape shape{1, 2, 1, 96, 160};
  const std::vector<Chip> chips = select_chips("m1_max,m4_max");
  const TuneResult r = tune_kernel(small_forward(), shape, chips, 0, grid);
  ASSERT_EQ(r.ranked.size(), 8u);
  EXPECT_EQ(r.refused, 0u);
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const TuneCandidate& c = r.ranked[i];
    ASSERT_EQ(c.predictions.size(), 2u);
    EXPECT_EQ(c.predictions[0].chip, "M1 Max");
    EXPECT_DOUBLE_EQ(c.total_seconds, c.predictions[0].seconds + c.predictions[1].seconds);
    if (i > 0) {
      EXPECT_LE(r.ranked[i - 1].total_seconds, c.total_seconds);
    }
  }
  // The best row's prediction is the one `mfagen profile` makes for that spec
  // with those tiles pinned: the search adds nothing of its own to the model.
  spec::KernelSpec pinned = small_forward();
  pinned.tiles = r.ranked.front().tiles;
  const ProfiledKernel direct = predict_on(profile_plan_call(plan::plan_kernel(pinned), shape, 0), chips);
  EXPECT_DOUBLE_EQ(direct.predictions[0].seconds, r.ranked.front().predictions[0].seconds);
  EXPECT_DOUBLE_EQ(direct.predictions[1].seconds, r.ranked.front().predictions[1].seconds);
  // The planner's own choice is reported beside the search.
  EXPECT_EQ(r.table_tiles, (spec::Tiles{64, 32, 8, 2}));  // the causal row up to D 64
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["candidates"].size(), 8u);
  EXPECT_EQ(j["best"]["block_q"], r.ranked.front().tiles.block_q);
}

TEST(Tune, WritesTheBestTilesIntoTheRowTheKernelFallsIn) {
  nlohmann::json table = nlohmann::json::parse(R"({"rows": [
      {"kind": "forward", "max_head_dim": 16, "tiles": {"block_q": 8, "block_k": 8, "simdgroups": 1}},
      {"kind": "decode", "max_head_dim": 64, "tiles": {"block_q": 8, "block_k": 8, "simdgroups": 1}},
      {"kind": "forward", "max_head_dim": 64, "tiles": {"block_q": 8, "block_k": 8, "simdgroups": 1}},
      {"kind": "forward", "max_head_dim": 128, "tiles": {"block_q": 8, "block_k": 8, "simdgroups": 1}}]})");
  const nlohmann::json before = table;
  TuneResult r;
  r.spec = small_forward();  // forward, head dim 32
  TuneCandidate best;
  best.tiles = {32, 16, 2};
  r.ranked.push_back(best);
  write_best_rows(table, {r}, "mfagen tune x.json");
  EXPECT_EQ(table["rows"][2]["tiles"], (nlohmann::json{{"block_q", 32}, {"block_k", 16}, {"simdgroups", 2}}));
  EXPECT_EQ(table["rows"][2]["source"], "mfagen tune x.json (kernel tuned)");
  for (size_t i : {0u, 1u, 3u}) EXPECT_EQ(table["rows"][i], before["rows"][i]) << i;

  r.spec.head_dim = r.spec.head_dim_v = 256;  // past every forward row
  EXPECT_THROW(write_best_rows(table, {r}, "mfagen tune x.json"), std::invalid_argument);
}

}  // namespace
}  // namespace mfagen::profile
