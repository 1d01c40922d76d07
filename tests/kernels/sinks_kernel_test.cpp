// Attention sinks (spec `sinks: true`, DESIGN.md section 13) in the forward,
// split-K decode and backward kernels: alone and with causal, window, GQA,
// softcap, ALiBi and masks, in every dtype, on the cpu backend with every
// detector on, against the float64 reference extended with the sink column
// (and its gradient d_sinks). Every fourth head has a sink of -inf.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "forward_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;

ForwardCase with_sinks(spec::Kind kind, DType dtype, uint64_t sq, uint64_t sk) {
  ForwardCase c;
  c.kind = kind;
  c.dtype = dtype;
  c.head_dim = 40;
  c.batch = 2;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.seq_q = sq;
  c.seq_k = sk;
  c.sinks = true;
  return c;
}

std::vector<ForwardCase> forward_cases() {
  std::vector<ForwardCase> all;
  for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
    ForwardCase c = with_sinks(spec::Kind::forward, t, 37, 53);
    all.push_back(c);
    c.causal = Causal::bottom_right;
    all.push_back(c);
    c.causal = Causal::none;
    c.window = {{8, 3}};
    all.push_back(c);
    c.window.reset();
    c.softcap = 5;
    all.push_back(c);
  }
  {
    ForwardCase c = with_sinks(spec::Kind::forward, DType::float16, 300, 300);  // many key blocks
    c.causal = Causal::top_left;
    c.window = {{40, 0}};
    c.heads_q = c.heads_kv = 8;  // no GQA grouping
    c.batch = 1;
    all.push_back(c);
    c = with_sinks(spec::Kind::forward, DType::bfloat16, 29, 41);
    c.alibi = true;
    c.mask = spec::MaskKind::additive;
    c.softcap = 3;
    all.push_back(c);
    c.mask = spec::MaskKind::boolean;  // every 5th row sees no key: out 0, lse = the sink
    all.push_back(c);
  }
  return all;
}

std::vector<ForwardCase> decode_cases() {
  std::vector<ForwardCase> all;
  for (uint32_t splits : {1u, 13u}) {  // the sink is folded exactly once, in the combine
    ForwardCase c = with_sinks(spec::Kind::decode, DType::float32, 4, 4097);
    c.head_dim = 64;
    c.heads_q = 8;
    c.heads_kv = 1;
    c.splits = splits;
    all.push_back(c);
  }
  {
    ForwardCase c = with_sinks(spec::Kind::decode, DType::float16, 1, 100);  // few keys: the sink weighs a lot
    all.push_back(c);
    c = with_sinks(spec::Kind::decode, DType::bfloat16, 3, 2000);
    c.causal = Causal::bottom_right;
    c.window = {{300, 0}};
    c.softcap = 10;
    all.push_back(c);
    c = with_sinks(spec::Kind::decode, DType::float16, 2, 700);
    c.mask = spec::MaskKind::boolean;
    c.mask_fill = ForwardCase::MaskFill::all_hidden;  // no key anywhere: every split is empty
    c.splits = 4;
    all.push_back(c);
  }
  return all;
}

std::vector<ForwardCase> backward_cases() {
  std::vector<ForwardCase> all;
  for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
    ForwardCase c = with_sinks(spec::Kind::backward, t, 33, 45);
    c.head_dim = 32;
    all.push_back(c);
  }
  {
    ForwardCase c = with_sinks(spec::Kind::backward, DType::float32, 29, 31);
    c.causal = Causal::bottom_right;
    c.softcap = 4;
    c.window = {{6, 2}};
    all.push_back(c);
    c = with_sinks(spec::Kind::backward, DType::float16, 40, 70);
    c.heads_q = 8;
    c.heads_kv = 1;  // MQA: dK, dV over 8 heads, d_sinks per head
    c.causal = Causal::top_left;
    all.push_back(c);
    c = with_sinks(spec::Kind::backward, DType::float32, 21, 19);
    c.mask = spec::MaskKind::boolean;  // rows that see no key have out 0, so D = 0: no d_sinks term
    c.alibi = true;
    all.push_back(c);
  }
  return all;
}

std::string case_name(const ::testing::TestParamInfo<ForwardCase>& info) {
  return std::to_string(info.index) + "_" + make_spec(info.param).name;
}

class SinksForward : public ::testing::TestWithParam<ForwardCase> {};
TEST_P(SinksForward, MatchesFloat64ReferenceWithNoFindings) {
  const ForwardOutcome outcome = run_forward_case(GetParam());
  EXPECT_TRUE(outcome.ok()) << GetParam().describe() << "\n" << outcome.report();
}
INSTANTIATE_TEST_SUITE_P(Sinks, SinksForward, ::testing::ValuesIn(forward_cases()), case_name);

class SinksDecode : public ::testing::TestWithParam<ForwardCase> {};
TEST_P(SinksDecode, MatchesFloat64ReferenceWithNoFindings) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << " (" << outcome.splits << " splits)\n" << outcome.report();
  if (c.splits) {
    EXPECT_EQ(outcome.splits, c.splits);
  }
}
INSTANTIATE_TEST_SUITE_P(Sinks, SinksDecode, ::testing::ValuesIn(decode_cases()), case_name);

class SinksBackward : public ::testing::TestWithParam<ForwardCase> {};
TEST_P(SinksBackward, GradientsAndSinkGradientMatchFloat64Reference) {
  const ForwardOutcome outcome = run_forward_case(GetParam());
  EXPECT_TRUE(outcome.ok()) << GetParam().describe() << "\n" << outcome.report();
  EXPECT_EQ(outcome.gradients.size(), 4u);           // dq, dk, dv, d_sinks
  EXPECT_EQ(outcome.backward.launches.size(), 4u);   // preprocess, dkdv, dq, dsinks
}
INSTANTIATE_TEST_SUITE_P(Sinks, SinksBackward, ::testing::ValuesIn(backward_cases()), case_name);

// A row that sees no key: out exactly 0 and lse the head's sink logit (-inf
// for a head without one), in the forward and in split-K decode.
TEST(SinksRows, RowWithoutKeysGivesZeroAndTheSink) {
  for (spec::Kind kind : {spec::Kind::forward, spec::Kind::decode}) {
    ForwardCase c = with_sinks(kind, DType::float32, 3, 90);
    c.mask = spec::MaskKind::boolean;
    c.mask_fill = ForwardCase::MaskFill::all_hidden;
    c.splits = kind == spec::Kind::decode ? 3 : 0;
    const ForwardOutcome outcome = run_forward_case(c);
    ASSERT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
    for (float x : outcome.out_values) EXPECT_EQ(x, 0.0f);
    const std::vector<double> sinks = case_sinks(c);
    ASSERT_TRUE(std::isinf(*std::min_element(sinks.begin(), sinks.end())));  // one head without a sink
    for (uint64_t b = 0; b < c.batch; ++b)
      for (uint64_t h = 0; h < c.heads_q; ++h)
        for (uint64_t i = 0; i < c.seq_q; ++i) {
          const float lse = outcome.lse_values[(b * c.heads_q + h) * c.seq_q + i];
          const double sink = sinks[h];
          if (std::isinf(sink)) EXPECT_EQ(lse, -INFINITY) << "head " << h;
          else EXPECT_NEAR(lse, sink, 1e-6 * std::abs(sink)) << "head " << h;
        }
  }
}

TEST(SinksBackward, BitIdenticalRunToRun) {
  ForwardCase c = with_sinks(spec::Kind::backward, DType::float16, 70, 40);
  c.heads_q = 4;
  c.heads_kv = 1;
  const ForwardOutcome a = run_forward_case(c), b = run_forward_case(c);
  ASSERT_TRUE(a.ok()) << a.report();
  EXPECT_EQ(a.gradient_values, b.gradient_values);  // d_sinks included
}

}  // namespace
}  // namespace mfagen::test
