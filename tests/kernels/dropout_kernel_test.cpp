// Dropout (spec dropout, DESIGN.md section 13): each P.V weight kept with
// probability 1 - p and scaled by 1 / (1 - p), as Philox4x32-10 of (j, i,
// b Hq + h, offset) under the seed decides; lse of the softmax before
// dropout. The forward and the backward (which regenerates the forward's
// mask) against the float64 reference that implements the same generator,
// alone and with causal, GQA, window, softcap, ALiBi, masks and sinks, in
// every dtype; the mask does not depend on the tile table (two tile tables
// match the same reference); every detector is on.
#include <gtest/gtest.h>

#include <vector>

#include "forward_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;

ForwardCase with_dropout(spec::Kind kind, DType dtype, uint32_t d, uint64_t sq, uint64_t sk, double p) {
  ForwardCase c;
  c.kind = kind;
  c.dtype = dtype;
  c.head_dim = d;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.batch = 2;
  c.seq_q = sq;
  c.seq_k = sk;
  c.dropout = reference::DropoutOptions{p, 0x9E3779B97F4A7C15ull, 17};
  return c;
}

std::vector<ForwardCase> cases() {
  std::vector<ForwardCase> all;
  for (spec::Kind kind : {spec::Kind::forward, spec::Kind::backward}) {
    for (DType t : {DType::float16, DType::bfloat16, DType::float32})
      all.push_back(with_dropout(kind, t, 64, 40, 70, 0.2));
    ForwardCase c = with_dropout(kind, DType::float16, 64, 70, 70, 0.5);
    c.causal = Causal::bottom_right;
    all.push_back(c);
    c = with_dropout(kind, DType::float32, 32, 33, 45, 0.1);
    c.window = {{10, 3}};
    c.softcap = 20;
    c.sinks = true;
    all.push_back(c);
    c = with_dropout(kind, DType::float16, 64, 30, 50, 0.3);
    c.alibi = true;
    c.mask = spec::MaskKind::boolean;
    c.heads_kv = 1;
    all.push_back(c);
  }
  // The same mask under other tiles: the reference decides it, element by element.
  ForwardCase c = with_dropout(spec::Kind::forward, DType::float32, 64, 70, 90, 0.4);
  all.push_back(c);
  c.tiles = spec::Tiles{16, 32, 2};
  all.push_back(c);
  // p = 0 keeps everything (and equals attention without dropout).
  all.push_back(with_dropout(spec::Kind::forward, DType::float16, 64, 20, 20, 0.0));
  return all;
}

class DropoutKernel : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(DropoutKernel, MatchesTheFloat64ReferenceWithTheSameGenerator) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
}

INSTANTIATE_TEST_SUITE_P(Dropout, DropoutKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ForwardCase>& info) {
                           return std::to_string(info.index) + "_" + make_spec(info.param).name;
                         });

// Run to run, the backward writes the same bits (no atomics, the mask regenerated).
TEST(DropoutBackward, BitIdenticalRunToRun) {
  const ForwardCase c = with_dropout(spec::Kind::backward, DType::float16, 64, 40, 70, 0.3);
  const ForwardOutcome a = run_forward_case(c), b = run_forward_case(c);
  ASSERT_TRUE(a.ok()) << a.report();
  EXPECT_EQ(a.gradient_values, b.gradient_values);
  EXPECT_EQ(a.out_values, b.out_values);
}

}  // namespace
}  // namespace mfagen::test
