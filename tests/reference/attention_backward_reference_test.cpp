// The backward reference against central finite differences of the forward
// reference (float64), for every feature, so the gradients kernels are
// judged by are themselves right.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>

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
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }  // gtest names the case on failure

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

// A bool mask (broadcast over batch and heads) that hides one whole query
// row, kHiddenRow, and one more key elsewhere.
constexpr uint64_t kHiddenRow = 1;
AttentionProblem with_hidden_row(AttentionProblem p) {
  p.mask_shape = {1, 1, p.seq_q, p.seq_k};
  p.bool_mask = std::vector<uint8_t>(p.seq_q * p.seq_k, 1);
  for (uint64_t j = 0; j < p.seq_k; ++j) p.bool_mask[kHiddenRow * p.seq_k + j] = 0;
  p.bool_mask[(kHiddenRow + 1) * p.seq_k + 2] = 0;
  return p;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  all.push_back({"plain", base(4, 6)});
  all.push_back({"causal_top_left_sq_gt_sk", base(7, 4, CausalMode::top_left)});
  all.push_back({"causal_top_left_sq_lt_sk", base(3, 7, CausalMode::top_left)});
  all.push_back({"causal_bottom_right_sq_lt_sk", base(3, 7, CausalMode::bottom_right)});
  all.push_back({"causal_bottom_right_sq_gt_sk", base(7, 3, CausalMode::bottom_right)});
  {
    AttentionProblem p = base(4, 5);
    p.heads_q = 8;  // GQA 4: two kv heads, each read by four query heads
    p.heads_kv = 2;
    all.push_back({"gqa4", p});
    p.heads_q = 4;  // MQA: one kv head for every query head
    p.heads_kv = 1;
    all.push_back({"mqa", p});
    p.heads_kv = 4;
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
    AttentionProblem p = base(4, 7);  // off = Sk - Sq = 3 for the window and ALiBi
    p.window = {{1, 2}};
    all.push_back({"window_sq_lt_sk", p});
    p.window = {{1, -1}};
    p.causal = CausalMode::bottom_right;
    all.push_back({"window_left_only_causal", p});
    p.window.reset();
    p.causal = CausalMode::none;
    p.alibi_slopes = {0.5, 0.25, 0.125, 1.0};  // per (batch, query head)
    all.push_back({"alibi_per_batch_head_sq_lt_sk", p});
  }
  {
    AttentionProblem p = base(4, 5);
    p.head_dim = 3;  // Dv > D (every other case has D = 5 > Dv = 3)
    p.head_dim_v = 6;
    all.push_back({"head_dim_v_gt_head_dim", p});
  }
  all.push_back({"bool_mask_with_hidden_row", with_hidden_row(base(4, 5))});
  {
    AttentionProblem p = base(4, 5);
    p.mask_shape = {1, 1, 4, 5};
    p.additive_mask = random_tensor(20, 14, ElementType::float32);
    p.additive_mask[3] = -INFINITY;
    all.push_back({"additive_mask", p});
    p.mask_shape = {2, 2, 4, 5};  // one mask per (batch, head)
    p.additive_mask = random_tensor(80, 16, ElementType::float32);
    p.additive_mask[45] = -INFINITY;
    all.push_back({"additive_mask_per_batch_head", p});
  }
  {
    // Every feature at once: GQA, bottom_right with Sq < Sk, window, softcap,
    // ALiBi, both masks and a custom scale.
    AttentionProblem p = base(5, 8, CausalMode::bottom_right);
    p.heads_q = 4;
    p.heads_kv = 2;
    p.window = {{3, -1}};
    p.softcap = 2.0;
    p.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
    p.scale = 0.6;
    p.mask_shape = {1, 4, 1, 8};
    p.bool_mask = std::vector<uint8_t>(32, 1);
    p.bool_mask[9] = 0;
    p.additive_mask = random_tensor(32, 17, ElementType::float32, 0.5);
    all.push_back({"everything", p});
    p.sinks = {0.5, -1.0, 2.0, 0.25};  // and attention sinks
    all.push_back({"everything_with_sinks", p});
  }
  {
    AttentionProblem p = base(4, 6);
    p.sinks = {1.25, -0.5};
    all.push_back({"sinks", p});
    p = with_hidden_row(base(4, 5, CausalMode::bottom_right));  // a row with no key: lse is the sink
    p.sinks = {-INFINITY, 0.75};                                // and a head without a sink
    all.push_back({"sinks_hidden_row_and_no_sink", p});
  }
  return all;
}

std::vector<double> random_d_out(const AttentionProblem& p, uint64_t seed = 15) {
  return random_tensor(p.batch * p.heads_q * p.seq_q * p.head_dim_v, seed, ElementType::float32);
}

// L = sum(out * dO); dL/dx by central differences, x each element of q, k and
// v in turn, h = 1e-6 (times |x| when |x| > 1). The largest difference from
// the analytic gradient must be below 1e-6 relative to the tensor's largest
// gradient (at least 1).
void expect_matches_finite_differences(AttentionProblem p, double q_scale = 1, double kv_scale = 1) {
  fill(p, q_scale, kv_scale);
  const std::vector<double> d_out = random_d_out(p);
  const AttentionGradients g = reference_attention_backward(p, d_out);
  auto loss = [&](const AttentionProblem& x) {
    const AttentionResult r = reference_attention(x);
    double l = 0;
    for (size_t i = 0; i < r.out.size(); ++i) l += r.out[i] * d_out[i];
    return l;
  };
  auto check = [&](std::vector<double> AttentionProblem::*field, const std::vector<double>& analytic, const char* n) {
    AttentionProblem x = p;
    ASSERT_EQ(analytic.size(), (x.*field).size()) << n;
    double worst = 0, largest = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < analytic.size(); ++i) {
      const double h = 1e-6 * std::max(1.0, std::abs((x.*field)[i]));
      const double keep = (x.*field)[i];
      (x.*field)[i] = keep + h;
      const double up = loss(x);
      (x.*field)[i] = keep - h;
      const double down = loss(x);
      (x.*field)[i] = keep;
      const double error = std::abs((up - down) / (2 * h) - analytic[i]);
      if (error > worst) worst = error, worst_at = i;
      largest = std::max(largest, std::abs(analytic[i]));
    }
    EXPECT_GT(largest, 1e-3) << n << ": gradient vanishes, the check would prove nothing";
    EXPECT_LT(worst, 1e-6 * std::max(1.0, largest)) << n << " element " << worst_at;
  };
  check(&AttentionProblem::q, g.dq, "dq");
  check(&AttentionProblem::k, g.dk, "dk");
  check(&AttentionProblem::v, g.dv, "dv");
  if (p.sinks.empty()) return;
  // d_sinks: by finite differences too, over the heads that have a sink.
  AttentionProblem with_finite_sinks = p;
  for (size_t h = 0; h < p.sinks.size(); ++h) {
    if (std::isinf(p.sinks[h])) {
      EXPECT_EQ(g.d_sinks[h], 0.0) << "a head without a sink has no sink gradient";
    }
  }
  for (double& s : with_finite_sinks.sinks)
    if (std::isinf(s)) s = 0;  // keep the central differences finite; its gradient is then checked too
  p = with_finite_sinks;
  const AttentionGradients finite_g = reference_attention_backward(p, d_out);
  check(&AttentionProblem::sinks, finite_g.d_sinks, "d_sinks");
}

class BackwardReference : public ::testing::TestWithParam<Case> {};

TEST_P(BackwardReference, MatchesFiniteDifferences) { expect_matches_finite_differences(GetParam().problem); }

INSTANTIATE_TEST_SUITE_P(Features, BackwardReference, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// Large logits: q scaled by 5, k and v by 3, so the softmax is nearly one-hot.
TEST(BackwardReference, LargeLogits) { expect_matches_finite_differences(base(5, 6), 5, 3); }
TEST(BackwardReference, LargeLogitsCausal) {
  expect_matches_finite_differences(base(5, 6, CausalMode::bottom_right), 5, 3);
}
TEST(BackwardReference, LargeLogitsSoftcap) {
  AttentionProblem p = base(5, 6);
  p.softcap = 3;  // tanh saturates: the softcap factor (1 - tanh^2) is far from 1
  expect_matches_finite_differences(p, 5, 3);
}

// Dropout: the mask is a function of the element only, so the forward stays
// differentiable in q, k, v and the gradients follow the dropped weights.
TEST(BackwardReference, DropoutMatchesFiniteDifferences) {
  AttentionProblem p = base(5, 6, CausalMode::bottom_right);
  p.dropout = DropoutOptions{0.35, 0xfeedbeef12345ull, 3};
  expect_matches_finite_differences(p);
}

TEST(BackwardReference, HiddenRowsHaveZeroGradient) {
  AttentionProblem p = base(4, 2, CausalMode::bottom_right);  // rows 0 and 1 see no key
  fill(p);
  const auto g = reference_attention_backward(p, random_tensor(2 * 2 * 4 * 3, 1, ElementType::float32));
  for (uint64_t b = 0; b < 2; ++b)
    for (uint64_t h = 0; h < 2; ++h)
      for (uint64_t i = 0; i < 2; ++i)
        for (uint64_t d = 0; d < 5; ++d) EXPECT_EQ(g.dq[((b * 2 + h) * 4 + i) * 5 + d], 0.0);
}

// The row hidden by the bool mask: its dq is exactly 0, and its dO reaches
// neither dk nor dv (changing it leaves them bit-identical).
TEST(BackwardReference, BoolMaskHiddenRowHasExactlyZeroGradient) {
  AttentionProblem p = with_hidden_row(base(4, 5));
  fill(p);
  std::vector<double> d_out = random_d_out(p);
  const AttentionGradients g = reference_attention_backward(p, d_out);
  const AttentionGradients naive = naive_attention_backward_in_dtype(p, d_out, ElementType::float32);
  for (uint64_t b = 0; b < p.batch; ++b)
    for (uint64_t h = 0; h < p.heads_q; ++h)
      for (uint64_t d = 0; d < p.head_dim; ++d) {
        const uint64_t at = ((b * p.heads_q + h) * p.seq_q + kHiddenRow) * p.head_dim + d;
        EXPECT_EQ(g.dq[at], 0.0);
        EXPECT_EQ(naive.dq[at], 0.0);
      }
  for (uint64_t b = 0; b < p.batch; ++b)
    for (uint64_t h = 0; h < p.heads_q; ++h)
      for (uint64_t d = 0; d < p.head_dim_v; ++d)
        d_out[((b * p.heads_q + h) * p.seq_q + kHiddenRow) * p.head_dim_v + d] += 10.0;
  const AttentionGradients changed = reference_attention_backward(p, d_out);
  EXPECT_EQ(changed.dq, g.dq);
  EXPECT_EQ(changed.dk, g.dk);
  EXPECT_EQ(changed.dv, g.dv);
}

TEST(BackwardReference, RejectsDOutOfTheWrongShape) {
  AttentionProblem p = base(4, 5);
  fill(p);
  std::vector<double> d_out = random_d_out(p);
  d_out.pop_back();
  EXPECT_THROW(reference_attention_backward(p, d_out), std::invalid_argument);
}

double max_error(const std::vector<double>& x, const std::vector<double>& exact) {
  double e = 0;
  for (size_t i = 0; i < exact.size(); ++i) e = std::max(e, std::abs(x[i] - exact[i]));
  return e;
}
double max_magnitude(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

// The yardstick: float32 arithmetic stays close to float64; float16 and
// bfloat16 arithmetic land much further away, for all three gradients.
TEST(BackwardReference, NaiveInDtypeIsCloseForFloat32AndWorseForFloat16) {
  AttentionProblem p = base(16, 24, CausalMode::bottom_right);
  p.head_dim = 32;
  p.head_dim_v = 32;
  p.softcap = 5;
  p.q = random_tensor(2 * 2 * 16 * 32, 1, ElementType::bfloat16);  // representable in every type
  p.k = random_tensor(2 * 1 * 24 * 32, 2, ElementType::bfloat16);
  p.v = random_tensor(2 * 1 * 24 * 32, 3, ElementType::bfloat16);
  const auto d_out = random_tensor(2 * 2 * 16 * 32, 4, ElementType::bfloat16);
  const auto exact = reference_attention_backward(p, d_out);
  const auto f32 = naive_attention_backward_in_dtype(p, d_out, ElementType::float32);
  const auto f16 = naive_attention_backward_in_dtype(p, d_out, ElementType::float16);
  const auto bf16 = naive_attention_backward_in_dtype(p, d_out, ElementType::bfloat16);
  auto compare = [](const std::vector<double>& exact, const std::vector<double>& f32, const std::vector<double>& f16,
                    const std::vector<double>& bf16, const char* n) {
    const double e32 = max_error(f32, exact), e16 = max_error(f16, exact), ebf16 = max_error(bf16, exact);
    const double scale = std::max(1.0, max_magnitude(exact));
    EXPECT_GT(e32, 0) << n;
    EXPECT_LT(e32, 1e-5 * scale) << n;
    EXPECT_GT(e16, 10 * e32) << n;
    EXPECT_LT(e16, 5e-2 * scale) << n;  // worse, but still the same gradient
    EXPECT_GT(ebf16, e16) << n;         // 8 mantissa bits against 11
    EXPECT_LT(ebf16, 2e-1 * scale) << n;
  };
  compare(exact.dq, f32.dq, f16.dq, bf16.dq, "dq");
  compare(exact.dk, f32.dk, f16.dk, bf16.dk, "dk");
  compare(exact.dv, f32.dv, f16.dv, bf16.dv, "dv");
}

// check_gradient on a small float16 problem's dq (B=2, Hq=2, Sq=16, D=32).
class CheckGradient : public ::testing::Test {
 protected:
  void SetUp() override {
    p = base(16, 24);
    p.head_dim = 32;
    p.head_dim_v = 32;
    p.q = random_tensor(2 * 2 * 16 * 32, 1, ElementType::float16);
    p.k = random_tensor(2 * 1 * 24 * 32, 2, ElementType::float16);
    p.v = random_tensor(2 * 1 * 24 * 32, 3, ElementType::float16);
    d_out = random_tensor(2 * 2 * 16 * 32, 4, ElementType::float16);
    exact = reference_attention_backward(p, d_out);
    naive = naive_attention_backward_in_dtype(p, d_out, ElementType::float16);
    kernel = to_float(exact.dq);
  }
  ToleranceVerdict check(ElementType type = ElementType::float16) {
    return check_gradient(kernel, exact.dq, naive.dq, type, "dq", shape);
  }
  static uint64_t flat(uint64_t b, uint64_t h, uint64_t i, uint64_t d) { return ((b * 2 + h) * 16 + i) * 32 + d; }

  AttentionProblem p;
  std::vector<double> d_out;
  AttentionGradients exact, naive;
  std::vector<float> kernel;
  std::array<uint64_t, 4> shape{2, 2, 16, 32};
};

TEST_F(CheckGradient, AcceptsTheReferenceAndTheNaiveResult) {
  EXPECT_TRUE(check().ok) << check().detail;
  kernel = to_float(naive.dq);  // float16 values, error = the naive error <= 3x it
  const ToleranceVerdict v = check();
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_NEAR(v.bound, 3 * v.naive_error + 1e-5, 1e-15);
}

TEST_F(CheckGradient, RejectsAnErrorAndNamesTheElement) {
  kernel[flat(1, 0, 7, 3)] += 0.5f;
  const ToleranceVerdict v = check();
  EXPECT_FALSE(v.ok);
  EXPECT_NEAR(v.max_abs_error, 0.5, 1e-6);
  EXPECT_NE(v.detail.find("dq"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("(b=1,h=0,i=7,d=3)"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("3 x naive"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("outside atol"), std::string::npos) << v.detail;
}

TEST_F(CheckGradient, RejectsNaNAndInf) {
  kernel[flat(0, 1, 2, 0)] = NAN;
  ToleranceVerdict v = check();
  EXPECT_FALSE(v.ok);
  EXPECT_TRUE(std::isinf(v.max_abs_error));
  EXPECT_NE(v.detail.find("(b=0,h=1,i=2,d=0)"), std::string::npos) << v.detail;
  kernel = to_float(exact.dq);
  kernel[flat(1, 1, 15, 31)] = -INFINITY;
  v = check();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("(b=1,h=1,i=15,d=31)"), std::string::npos) << v.detail;
}

TEST_F(CheckGradient, RejectsTheWrongSize) {
  kernel.pop_back();
  const ToleranceVerdict v = check();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("expected"), std::string::npos) << v.detail;
}

// A small error within 3x naive can still break the elementwise rule: float32
// (atol 5e-6 scaled by max |ref|, rtol 5e-5) against a loose naive yardstick.
TEST_F(CheckGradient, ElementwiseRuleAppliesOnItsOwn) {
  const double largest = std::max(1.0, max_magnitude(exact.dq));
  const uint64_t at = flat(0, 0, 0, 0);
  kernel[at] = float(exact.dq[at] + 20 * (5e-6 * largest + 5e-5 * std::abs(exact.dq[at])));
  const ToleranceVerdict v = check(ElementType::float32);  // naive is float16: the 3x rule is loose
  EXPECT_LE(v.max_abs_error, v.bound);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("outside atol"), std::string::npos) << v.detail;
}

// Gradients of large magnitude: atol scales with max |ref|, so float32
// rounding of a value near 1e4 (error ~5e-4 > 5e-6 + 5e-5 * small values)
// elsewhere in the tensor passes.
TEST(CheckGradientScale, AtolScalesWithTheLargestReferenceValue) {
  const std::vector<double> reference = {2.0e4 + 1.0 / 3, 1.0 / 3, -7.25e3 + 1.0 / 7, 1e-3};
  std::vector<float> kernel = to_float(reference);
  kernel[3] = float(1e-3 + 0.05);  // 0.05 < atol 5e-6 * 2e4 = 0.1
  ToleranceVerdict v = check_gradient(kernel, reference, reference, ElementType::float32, "dv", {1, 1, 2, 2});
  EXPECT_FALSE(v.ok);  // the naive result is exact: 3x 0 + 1e-5 is the bound
  std::vector<double> naive = reference;
  naive[0] += 0.02;
  v = check_gradient(kernel, reference, naive, ElementType::float32, "dv", {1, 1, 2, 2});
  EXPECT_TRUE(v.ok) << v.detail;
  kernel[3] = float(1e-3 + 0.12);  // beyond atol 0.1 + rtol * 1e-3, and beyond 3 x 0.02
  v = check_gradient(kernel, reference, naive, ElementType::float32, "dv", {1, 1, 2, 2});
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("(b=0,h=0,i=1,d=1)"), std::string::npos) << v.detail;
}

}  // namespace
}  // namespace mfagen::reference
