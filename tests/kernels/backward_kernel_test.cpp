// Backward kernels (kind "backward"): preprocess, dK/dV over key blocks, dQ
// over query blocks, after the forward kernel of the same features; dQ, dK,
// dV against the independent float64 gradients (reference/), every
// detector on, with the gradient tolerance of DESIGN.md section 3.
#include <gtest/gtest.h>

#include <vector>

#include "forward_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;

ForwardCase backward(DType dtype, uint32_t d, Causal causal, uint64_t sq, uint64_t sk) {
  ForwardCase c = forward_case(dtype, d, 0, causal, sq, sk);
  c.kind = spec::Kind::backward;
  return c;
}

std::vector<ForwardCase> cases() {
  std::vector<ForwardCase> all;
  for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
    all.push_back(backward(t, 64, Causal::none, 40, 40));
    all.push_back(backward(t, 32, Causal::bottom_right, 23, 57));  // Sq < Sk
    all.push_back(backward(t, 48, Causal::top_left, 57, 23));      // Sq > Sk
  }
  {
    ForwardCase c = backward(DType::float16, 64, Causal::bottom_right, 33, 33);
    c.heads_q = 8;
    c.heads_kv = 2;  // GQA 4: dK, dV summed over the group
    c.batch = 2;
    all.push_back(c);
    c.heads_kv = 1;  // MQA
    all.push_back(c);
  }
  all.push_back(backward(DType::float32, 40, Causal::none, 1, 30));  // Sq = 1
  all.push_back(backward(DType::float32, 40, Causal::top_left, 30, 1));  // Sk = 1: rows see one key or none
  all.push_back(backward(DType::float16, 20, Causal::none, 13, 29));     // odd sizes, D not a multiple of 8
  {
    ForwardCase c = backward(DType::float16, 24, Causal::none, 17, 17);
    c.head_dim_v = 40;  // Dv != D
    all.push_back(c);
  }
  {
    ForwardCase c = backward(DType::float32, 32, Causal::none, 29, 31);
    c.window = {{6, 2}};
    all.push_back(c);
    c.window.reset();
    c.softcap = 4;
    all.push_back(c);
    c.softcap = 0;
    c.alibi = true;
    all.push_back(c);
    c.alibi = false;
    c.mask = spec::MaskKind::boolean;  // with fully hidden rows: their gradients are 0
    all.push_back(c);
    c.mask = spec::MaskKind::additive;
    all.push_back(c);
    c.scale = 0.3;
    c.softcap = 2;
    c.alibi = true;
    c.window = {{9, -1}};
    c.causal = Causal::bottom_right;
    all.push_back(c);  // everything at once
  }
  for (DType t : {DType::float16, DType::bfloat16}) {
    ForwardCase c = backward(t, 32, Causal::top_left, 26, 31);  // every feature in the 16-bit types
    c.mask = spec::MaskKind::additive;
    c.softcap = 3;
    c.alibi = true;
    c.window = {{7, 3}};
    all.push_back(c);
    c = backward(t, 32, Causal::none, 21, 19);
    c.mask = spec::MaskKind::boolean;
    c.heads_q = 4;
    c.heads_kv = 1;
    all.push_back(c);
  }
  for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
    ForwardCase c = backward(t, 64, Causal::bottom_right, 30, 45);  // large logits
    c.q_scale = 5;
    c.kv_scale = 3;
    c.judge_forward = t != DType::float32;  // see ForwardCase::judge_forward
    all.push_back(c);
  }
  {
    ForwardCase c = backward(DType::bfloat16, 576, Causal::bottom_right, 12, 20);
    c.head_dim_v = 512;  // DeepSeek MLA shape, blocked along D
    all.push_back(c);
  }
  return all;
}

class BackwardKernel : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(BackwardKernel, GradientsMatchFloat64ReferenceWithNoFindings) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
  EXPECT_EQ(outcome.gradients.size(), 3u);
  EXPECT_EQ(outcome.backward.launches.size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(Backward, BackwardKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ForwardCase>& info) {
                           return std::to_string(info.index) + "_" + make_spec(info.param).name;
                         });

TEST(BackwardDeterminism, BitIdenticalRunToRun) {
  ForwardCase c = backward(DType::float16, 64, Causal::bottom_right, 40, 70);
  c.heads_q = 4;
  c.heads_kv = 1;
  const ForwardOutcome a = run_forward_case(c), b = run_forward_case(c);
  ASSERT_TRUE(a.ok()) << a.report();
  EXPECT_EQ(a.gradient_values, b.gradient_values);
}

}  // namespace
}  // namespace mfagen::test
