// Attention features (DESIGN.md section 3: masks, sliding window, softcap,
// ALiBi, custom scale) in the generated forward kernels, alone and combined,
// in every dtype, on the cpu backend with every detector on, against the
// float64 reference. Fully hidden rows must give out 0 and lse -inf.
#include <gtest/gtest.h>

#include <vector>

#include "forward_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;
using spec::MaskKind;
using Fill = ForwardCase::MaskFill;

ForwardCase base(DType dtype, Causal causal = Causal::none) {
  ForwardCase c;
  c.dtype = dtype;
  c.head_dim = 40;
  c.causal = causal;
  c.batch = 2;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.seq_q = 37;
  c.seq_k = 53;
  return c;
}

std::vector<ForwardCase> features() {
  std::vector<ForwardCase> cases;
  for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
    ForwardCase c = base(t);
    c.mask = MaskKind::boolean;  // random, with every 5th row fully hidden
    cases.push_back(c);
    c.mask = MaskKind::additive;
    cases.push_back(c);

    c = base(t);
    c.window = {{8, 3}};
    cases.push_back(c);
    c.window = {{-1, 0}};
    cases.push_back(c);
    c.window = {{5, -1}};
    c.causal = Causal::bottom_right;  // window + causal, both alignments
    cases.push_back(c);
    c.causal = Causal::top_left;
    c.window = {{20, 2}};
    cases.push_back(c);

    c = base(t);
    c.softcap = 5.0;
    cases.push_back(c);
    c = base(t);
    c.alibi = true;
    cases.push_back(c);
    c.alibi_per_batch = true;
    c.causal = Causal::bottom_right;
    cases.push_back(c);

    c = base(t, Causal::top_left);  // softcap + ALiBi + additive mask
    c.softcap = 3.0;
    c.alibi = true;
    c.mask = MaskKind::additive;
    c.scale = 0.2;
    cases.push_back(c);
  }
  // All-false, all-true and broadcast masks.
  for (MaskKind kind : {MaskKind::boolean, MaskKind::additive}) {
    ForwardCase c = base(DType::float16);
    c.mask = kind;
    c.mask_fill = Fill::all_hidden;
    cases.push_back(c);
    c.mask_fill = Fill::all_visible;
    cases.push_back(c);
    c.mask_fill = Fill::random;
    c.mask_extents = {0, 1, 0, 0};  // (B, 1, Sq, Sk)
    cases.push_back(c);
    c.mask_extents = {1, 1, 0, 0};  // (1, 1, Sq, Sk)
    c.causal = Causal::bottom_right;
    cases.push_back(c);
  }
  // A window that hides whole key blocks on both sides of a long row, and
  // a window too narrow for some rows to see any key.
  {
    ForwardCase c = base(DType::float16);
    c.seq_q = c.seq_k = 300;
    c.window = {{40, 16}};
    c.heads_q = c.heads_kv = 1;
    c.batch = 1;
    cases.push_back(c);
    c.seq_q = 100;
    c.seq_k = 20;
    c.window = {{0, 0}};  // row i sees key i - 80 only
    cases.push_back(c);
  }
  return cases;
}

class ForwardFeature : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(ForwardFeature, MatchesFloat64ReferenceWithNoFindings) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
}

INSTANTIATE_TEST_SUITE_P(Features, ForwardFeature, ::testing::ValuesIn(features()),
                         [](const ::testing::TestParamInfo<ForwardCase>& info) {
                           return std::to_string(info.index) + "_" + make_spec(info.param).name;
                         });

}  // namespace
}  // namespace mfagen::test
