// Split-K decode kernels (kind "decode"): a few queries against long key
// sequences, the queries of a GQA group sharing threadgroups, keys split
// over threadgroups and merged by a second kernel. Against the float64
// reference, every detector on; one split and many agree, and runs are
// deterministic bit for bit.
#include <gtest/gtest.h>

#include <vector>

#include "forward_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;

ForwardCase decode(DType dtype, uint64_t sq, uint64_t sk, uint32_t splits = 0) {
  ForwardCase c;
  c.kind = spec::Kind::decode;
  c.dtype = dtype;
  c.head_dim = 64;
  c.heads_q = 8;
  c.heads_kv = 1;  // GQA 8: one kv head, its 8 query heads in one threadgroup row block
  c.seq_q = sq;
  c.seq_k = sk;
  c.splits = splits;
  return c;
}

std::vector<ForwardCase> cases() {
  std::vector<ForwardCase> all;
  for (uint64_t sk : {1u, 100u, 4097u}) all.push_back(decode(DType::float16, 1, sk));
  all.push_back(decode(DType::bfloat16, 1, 32768));
  {
    // Two simdgroups of 8 rows (the tiles docs/kernel_speed.md suggests for
    // several queries): GQA 4 with 1 query leaves the second simdgroup without
    // a valid row, so it only stages and meets the barriers; 3 queries fill 12
    // of the 16 rows.
    ForwardCase c = decode(DType::float16, 1, 3000);
    c.heads_q = 4;
    c.tiles = spec::Tiles{16, 32, 2};
    all.push_back(c);
    c.seq_q = 3;
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  all.push_back(decode(DType::float32, 4, 4097, 1));   // one split
  all.push_back(decode(DType::float32, 4, 4097, 13));  // many splits
  {
    ForwardCase c = decode(DType::float16, 16, 1000);
    c.heads_q = 4;
    c.heads_kv = 2;
    c.batch = 2;
    c.causal = Causal::bottom_right;
    all.push_back(c);
    c.window = {{300, 0}};
    all.push_back(c);
  }
  {
    ForwardCase c = decode(DType::bfloat16, 3, 700, 5);
    c.mask = spec::MaskKind::additive;
    c.softcap = 10;
    c.alibi = true;
    all.push_back(c);
    c.mask = spec::MaskKind::boolean;  // every 5th query row hidden: here row 3 does not exist, so none
    c.mask_fill = ForwardCase::MaskFill::all_hidden;
    all.push_back(c);
  }
  {
    ForwardCase c = decode(DType::float16, 2, 600);
    c.head_dim = 576;  // DeepSeek MLA shape in decode
    c.head_dim_v = 512;
    c.heads_q = 4;
    all.push_back(c);
  }
  return all;
}

class DecodeKernel : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(DecodeKernel, MatchesFloat64ReferenceWithNoFindings) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << " (" << outcome.splits << " splits)\n" << outcome.report();
  EXPECT_EQ(outcome.dispatch.launches.size(), 2u);
  if (c.splits) {
    EXPECT_EQ(outcome.splits, c.splits);
  }
}

INSTANTIATE_TEST_SUITE_P(Decode, DecodeKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ForwardCase>& info) {
                           return std::to_string(info.index) + "_" + make_spec(info.param).name;
                         });

TEST(DecodeSplits, OneAndManyAgreeAndRunsAreDeterministic) {
  ForwardCase c = decode(DType::float16, 2, 5000, 1);
  const ForwardOutcome one = run_forward_case(c);
  c.splits = 0;
  const ForwardOutcome many = run_forward_case(c);
  const ForwardOutcome again = run_forward_case(c);
  ASSERT_TRUE(one.ok()) << one.report();
  ASSERT_TRUE(many.ok()) << many.report();
  EXPECT_EQ(one.splits, 1u);
  EXPECT_GT(many.splits, 4u);
  EXPECT_EQ(many.out_values, again.out_values);  // bit for bit
  EXPECT_EQ(many.lse_values, again.lse_values);
  double largest = 0;
  for (size_t i = 0; i < one.out_values.size(); ++i)
    largest = std::max(largest, double(std::abs(one.out_values[i] - many.out_values[i])));
  EXPECT_LE(largest, 2e-3);  // both within the float16 tolerance of the reference
}

}  // namespace
}  // namespace mfagen::test
