// The backward reference against central finite differences of the forward
// reference (float64), for every feature, so the gradients kernels are
// judged by are themselves right.
#include <gtest/gtest.h>

#include <cmath>

#include "attention_backward_reference.h"
#include "attention_reference.h"
#include "gradient_tolerance.h"
#include "random_inputs.h"

namespace mfagen::reference {
namespace {

struct Case {
  const char* name;
  AttentionProblem problem;
};

AttentionProblem base(uint64_t sq, uint64_t sk, CausalMode causal = CausalMode::none) {
  AttentionProblem p;
  p.batch = 2;
  p.heads_q = 2;
  p.heads_kv = 1;
  p.seq_q = sq;
  p.seq_k = sk;
  p.head_dim = 5;
  p.head_dim_v = 3;
  p.causal = causal;
  return p;
}

void fill(AttentionProblem& p, double q_scale = 1, double kv_scale = 1) {
  p.q = random_tensor(p.batch * p.heads_q * p.seq_q * p.head_dim, 11, ElementType::float32, q_scale);
  p.k = random_tensor(p.batch * p.heads_kv * p.seq_k * p.head_dim, 12, ElementType::float32, kv_scale);
  p.v = random_tensor(p.batch * p.heads_kv * p.seq_k * p.head_dim_v, 13, ElementType::float32, kv_scale);
}

std::vector<Case> cases() {
  std::vector<Case> all;
  all.push_back({"plain", base(4, 6)});
  all.push_back({"causal_top_left_sq_gt_sk", base(7, 4, CausalMode::top_left)});
  all.push_back({"causal_bottom_right_sq_lt_sk", base(3, 7, CausalMode::bottom_right)});
  all.push_back({"causal_bottom_right_sq_gt_sk", base(7, 3, CausalMode::bottom_right)});
  {
    AttentionProblem p = base(4, 5);
    p.heads_q = 4;  // GQA 4
    all.push_back({"gqa4", p});
    p.heads_kv = 4;
    p.heads_q = 4;
    all.push_back({"mha", p});
  }
  {
    AttentionProblem p = base(6, 6);
    p.window = {{2, 1}};
    all.push_back({"window", p});
    p.window.reset();
    p.softcap = 1.5;
    all.push_back({"softcap", p});
    p.softcap = 0;
    p.alibi_slopes = {0.5, 0.25};
    all.push_back({"alibi", p});
    p.alibi_slopes.clear();
    p.scale = 0.7;
    all.push_back({"scale", p});
  }
  {
    AttentionProblem p = base(4, 5);
    p.mask_shape = {1, 1, 4, 5};
    p.bool_mask = std::vector<uint8_t>(20, 1);
    for (int j = 0; j < 5; ++j) p.bool_mask[1 * 5 + j] = 0;  // row 1 sees nothing
    p.bool_mask[7] = 0;
    all.push_back({"bool_mask_with_hidden_row", p});
    p.bool_mask.clear();
    p.additive_mask = random_tensor(20, 14, ElementType::float32);
    p.additive_mask[3] = -INFINITY;
    all.push_back({"additive_mask", p});
  }
  return all;
}

// L = sum(out * dO); dL/dx by central differences, x each input element.
void expect_matches_finite_differences(AttentionProblem p, double q_scale = 1, double kv_scale = 1) {
  fill(p, q_scale, kv_scale);
  const std::vector<double> d_out =
      random_tensor(p.batch * p.heads_q * p.seq_q * p.head_dim_v, 15, ElementType::float32);
  const AttentionGradients g = reference_attention_backward(p, d_out);
  auto loss = [&](const AttentionProblem& x) {
    const AttentionResult r = reference_attention(x);
    double l = 0;
    for (size_t i = 0; i < r.out.size(); ++i) l += r.out[i] * d_out[i];
    return l;
  };
  auto check = [&](std::vector<double> AttentionProblem::*field, const std::vector<double>& analytic, const char* n) {
    AttentionProblem x = p;
    double worst = 0, largest = 0;
    for (size_t i = 0; i < analytic.size(); ++i) {
      const double h = 1e-6 * std::max(1.0, std::abs((x.*field)[i]));
      const double keep = (x.*field)[i];
      (x.*field)[i] = keep + h;
      const double up = loss(x);
      (x.*field)[i] = keep - h;
      const double down = loss(x);
      (x.*field)[i] = keep;
      worst = std::max(worst, std::abs((up - down) / (2 * h) - analytic[i]));
      largest = std::max(largest, std::abs(analytic[i]));
    }
    EXPECT_LT(worst, 1e-6 * std::max(1.0, largest)) << n;
  };
  check(&AttentionProblem::q, g.dq, "dq");
  check(&AttentionProblem::k, g.dk, "dk");
  check(&AttentionProblem::v, g.dv, "dv");
}

class BackwardReference : public ::testing::TestWithParam<Case> {};

TEST_P(BackwardReference, MatchesFiniteDifferences) { expect_matches_finite_differences(GetParam().problem); }

INSTANTIATE_TEST_SUITE_P(Features, BackwardReference, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(BackwardReference, LargeLogits) { expect_matches_finite_differences(base(5, 6, CausalMode::bottom_right), 5, 3); }

TEST(BackwardReference, HiddenRowsHaveZeroGradient) {
  AttentionProblem p = base(4, 2, CausalMode::bottom_right);  // rows 0 and 1 see no key
  fill(p);
  const auto g = reference_attention_backward(p, random_tensor(2 * 2 * 4 * 3, 1, ElementType::float32));
  for (uint64_t b = 0; b < 2; ++b)
    for (uint64_t h = 0; h < 2; ++h)
      for (uint64_t i = 0; i < 2; ++i)
        for (uint64_t d = 0; d < 5; ++d) EXPECT_EQ(g.dq[((b * 2 + h) * 4 + i) * 5 + d], 0.0);
}

TEST(BackwardReference, NaiveInDtypeIsCloseForFloat32AndWorseForFloat16) {
  AttentionProblem p = base(16, 24, CausalMode::none);
  p.head_dim = 32;
  p.head_dim_v = 32;
  p.q = random_tensor(2 * 2 * 16 * 32, 1, ElementType::float16);
  p.k = random_tensor(2 * 1 * 24 * 32, 2, ElementType::float16);
  p.v = random_tensor(2 * 1 * 24 * 32, 3, ElementType::float16);
  const auto d_out = random_tensor(2 * 2 * 16 * 32, 4, ElementType::float16);
  const auto exact = reference_attention_backward(p, d_out);
  const auto f32 = naive_attention_backward_in_dtype(p, d_out, ElementType::float32);
  const auto f16 = naive_attention_backward_in_dtype(p, d_out, ElementType::float16);
  double e32 = 0, e16 = 0;
  for (size_t i = 0; i < exact.dq.size(); ++i) {
    e32 = std::max(e32, std::abs(f32.dq[i] - exact.dq[i]));
    e16 = std::max(e16, std::abs(f16.dq[i] - exact.dq[i]));
  }
  EXPECT_LT(e32, 1e-5);
  EXPECT_GT(e16, 10 * e32);
  // check_gradient accepts the exact gradients and rejects an injected error.
  std::vector<float> as_float(exact.dq.begin(), exact.dq.end());
  EXPECT_TRUE(check_gradient(as_float, exact.dq, f16.dq, ElementType::float16, "dq", {2, 2, 16, 32}).ok);
  as_float[5] += 0.5f;
  EXPECT_FALSE(check_gradient(as_float, exact.dq, f16.dq, ElementType::float16, "dq", {2, 2, 16, 32}).ok);
}

}  // namespace
}  // namespace mfagen::reference
