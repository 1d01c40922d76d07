// The tolerance rule accepts the reference itself and catches each kind of
// kernel fault: a wrong element, an error above 2x naive, NaN/Inf, a nonzero
// row that has no visible key, and wrong lse values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "attention_reference.h"
#include "random_inputs.h"
#include "tolerance.h"

namespace mfagen::reference {
namespace {

constexpr float kInfF = std::numeric_limits<float>::infinity();

// Sq = 5 > Sk = 3 with causal bottom_right: rows 0 and 1 of every head see no key.
AttentionProblem problem_with_empty_rows(ElementType type) {
  AttentionProblem p;
  p.batch = 2;
  p.heads_q = 2;
  p.heads_kv = 1;
  p.seq_q = 5;
  p.seq_k = 3;
  p.head_dim = 8;
  p.head_dim_v = 4;
  p.causal = CausalMode::bottom_right;
  p.q = random_tensor(2 * 2 * 5 * 8, 21, type);
  p.k = random_tensor(2 * 1 * 3 * 8, 22, type);
  p.v = random_tensor(2 * 1 * 3 * 4, 23, type);
  return p;
}

struct ToleranceCase {
  AttentionProblem problem;
  AttentionResult reference, naive;
  explicit ToleranceCase(ElementType type)
      : problem(problem_with_empty_rows(type)),
        reference(reference_attention(problem)),
        naive(naive_attention_in_dtype(problem, type)) {}
  // The reference as a perfect kernel would store it in `type`, widened to float.
  std::vector<float> rounded_output(ElementType type) const {
    std::vector<float> out;
    for (double x : reference.out) out.push_back(round_to(type, x));
    return out;
  }
};

// Flat index of (b, h, i, d) in the (2, 2, 5, 4) output.
uint64_t at(uint64_t b, uint64_t h, uint64_t i, uint64_t d) { return ((b * 2 + h) * 5 + i) * 4 + d; }

TEST(CheckOutput, AcceptsTheReferenceConvertedToFloat) {
  for (ElementType type : {ElementType::float32, ElementType::float16, ElementType::bfloat16}) {
    ToleranceCase c(type);
    ASSERT_EQ(c.reference.lse[0], -std::numeric_limits<double>::infinity());  // the case does have empty rows
    ToleranceVerdict v = check_output(to_float(c.reference.out), c.reference, c.naive, type, c.problem);
    EXPECT_TRUE(v.ok) << v.detail;
    v = check_output(c.rounded_output(type), c.reference, c.naive, type, c.problem);
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_GT(v.naive_error, 0);
    EXPECT_EQ(v.bound, 2 * v.naive_error + 1e-5);
  }
}

TEST(CheckOutput, AcceptsTheNaiveResultItself) {
  // A kernel as bad as the naive computation is within 2x of it by definition.
  for (ElementType type : {ElementType::float32, ElementType::float16}) {
    ToleranceCase c(type);
    ToleranceVerdict v = check_output(to_float(c.naive.out), c.reference, c.naive, type, c.problem);
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_EQ(v.max_abs_error, v.naive_error);
  }
}

TEST(CheckOutput, CatchesAnInjectedError) {
  ToleranceCase c(ElementType::float32);
  std::vector<float> out = to_float(c.reference.out);
  out[at(1, 0, 3, 2)] += 1e-3f;
  ToleranceVerdict v = check_output(out, c.reference, c.naive, ElementType::float32, c.problem);
  EXPECT_FALSE(v.ok);
  EXPECT_NEAR(v.max_abs_error, 1e-3, 1e-6);
  EXPECT_NE(v.detail.find("FAILED"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("(b=1,h=0,i=3,d=2)"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("outside atol"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("exceeded"), std::string::npos) << v.detail;
}

TEST(CheckOutput, TheTwiceNaiveBoundIsARuleOfItsOwn) {
  // 3e-5 is inside float32's element tolerance for |ref| ~ 1 (5e-6 + 5e-5)
  // but far above 2x the naive float32 error (~1e-7) + 1e-5.
  ToleranceCase c(ElementType::float32);
  std::vector<float> out = to_float(c.reference.out);
  uint64_t n = at(0, 1, 4, 0);
  ASSERT_GT(std::fabs(c.reference.out[n]), 0.5);
  out[n] += 3e-5f;
  ToleranceVerdict v = check_output(out, c.reference, c.naive, ElementType::float32, c.problem);
  EXPECT_FALSE(v.ok);
  EXPECT_LT(v.bound, 3e-5);
  EXPECT_NE(v.detail.find("exceeded"), std::string::npos) << v.detail;
  EXPECT_EQ(v.detail.find("outside atol"), std::string::npos) << v.detail;
}

TEST(CheckOutput, TheElementToleranceIsARuleOfItsOwn) {
  // Hand-made results: the naive error 0.02 allows 0.04 overall, but an error
  // of 0.01 on an element whose reference is 0.001 breaks float16's
  // 5e-3 + 5e-2 * |ref|.
  AttentionProblem p;
  p.head_dim_v = 2;
  AttentionResult reference{{0.001, 1.0}, {0.0}};
  AttentionResult naive{{0.001, 1.02}, {0.0}};
  ToleranceVerdict v = check_output(std::vector<float>{0.011f, 1.0f}, reference, naive, ElementType::float16, p);
  EXPECT_FALSE(v.ok) << v.detail;
  EXPECT_NEAR(v.bound, 0.04001, 1e-12);
  EXPECT_NE(v.detail.find("outside atol"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("(b=0,h=0,i=0,d=0)"), std::string::npos) << v.detail;
  EXPECT_EQ(v.detail.find("exceeded"), std::string::npos) << v.detail;
  // The same error on the element with reference 1 is fine.
  EXPECT_TRUE(check_output(std::vector<float>{0.001f, 1.01f}, reference, naive, ElementType::float16, p).ok);
}

TEST(CheckOutput, CatchesNanAndInfinity) {
  ToleranceCase c(ElementType::float16);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), kInfF, -kInfF}) {
    std::vector<float> out = c.rounded_output(ElementType::float16);
    out[at(0, 0, 2, 1)] = bad;
    ToleranceVerdict v = check_output(out, c.reference, c.naive, ElementType::float16, c.problem);
    EXPECT_FALSE(v.ok);
    EXPECT_EQ(v.max_abs_error, std::numeric_limits<double>::infinity());
    EXPECT_NE(v.detail.find("NaN/Inf"), std::string::npos) << v.detail;
    EXPECT_NE(v.detail.find("(b=0,h=0,i=2,d=1)"), std::string::npos) << v.detail;
  }
}

TEST(CheckOutput, RowsWithoutVisibleKeysMustBeExactlyZero) {
  ToleranceCase c(ElementType::float32);
  std::vector<float> out = to_float(c.reference.out);
  out[at(1, 1, 1, 3)] = 1e-30f;  // tiny, well within every numeric tolerance
  ToleranceVerdict v = check_output(out, c.reference, c.naive, ElementType::float32, c.problem);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("without a visible key"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("(b=1,h=1,i=1,d=3)"), std::string::npos) << v.detail;
  // -0 is still zero.
  out[at(1, 1, 1, 3)] = -0.0f;
  EXPECT_TRUE(check_output(out, c.reference, c.naive, ElementType::float32, c.problem).ok);
}

TEST(CheckOutput, SizeMismatchFails) {
  ToleranceCase c(ElementType::float32);
  std::vector<float> out = to_float(c.reference.out);
  out.pop_back();
  ToleranceVerdict v = check_output(out, c.reference, c.naive, ElementType::float32, c.problem);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("size mismatch"), std::string::npos) << v.detail;
}

TEST(CheckOutput, NonFiniteNaiveResultGivesNoBoundButElementRulesStillHold) {
  ToleranceCase c(ElementType::float32);
  AttentionResult naive = c.naive;
  naive.out[at(0, 0, 4, 0)] = std::numeric_limits<double>::quiet_NaN();
  std::vector<float> out = to_float(c.reference.out);
  ToleranceVerdict v = check_output(out, c.reference, naive, ElementType::float32, c.problem);
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.naive_error, std::numeric_limits<double>::infinity());
  out[at(0, 0, 4, 0)] += 1e-2f;
  EXPECT_FALSE(check_output(out, c.reference, naive, ElementType::float32, c.problem).ok);
}

std::vector<float> lse_as_float(const AttentionResult& r) {
  std::vector<float> lse;
  for (double x : r.lse) lse.push_back(static_cast<float>(x));
  return lse;
}

TEST(CheckLse, AcceptsTheReferenceConvertedToFloat) {
  ToleranceCase c(ElementType::float32);
  ToleranceVerdict v = check_lse(lse_as_float(c.reference), c.reference, c.problem);
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_LT(v.max_abs_error, 1e-6);
}

TEST(CheckLse, CatchesAWrongValue) {
  ToleranceCase c(ElementType::float32);
  std::vector<float> lse = lse_as_float(c.reference);
  uint64_t row = (1 * 2 + 0) * 5 + 3;  // (b=1, h=0, i=3)
  lse[row] += 1e-3f;
  ToleranceVerdict v = check_lse(lse, c.reference, c.problem);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("(b=1,h=0,i=3)"), std::string::npos) << v.detail;
  v = check_lse(lse, c.reference);  // without the problem: a flat row index
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("[13]"), std::string::npos) << v.detail;
}

TEST(CheckLse, EmptyRowsMustBeExactlyMinusInfinity) {
  ToleranceCase c(ElementType::float32);
  for (float bad : {-1e30f, 0.0f, std::numeric_limits<float>::quiet_NaN(), kInfF}) {
    std::vector<float> lse = lse_as_float(c.reference);
    ASSERT_EQ(lse[0], -kInfF);
    lse[0] = bad;
    ToleranceVerdict v = check_lse(lse, c.reference, c.problem);
    EXPECT_FALSE(v.ok) << bad;
    EXPECT_NE(v.detail.find("not exactly -inf"), std::string::npos) << v.detail;
  }
}

TEST(CheckLse, CatchesNanAndInfinityWhereTheReferenceIsFinite) {
  ToleranceCase c(ElementType::float32);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), -kInfF, kInfF}) {
    std::vector<float> lse = lse_as_float(c.reference);
    lse[4] = bad;  // (b=0, h=0, i=4) sees every key
    ToleranceVerdict v = check_lse(lse, c.reference, c.problem);
    EXPECT_FALSE(v.ok) << bad;
    EXPECT_NE(v.detail.find("NaN/Inf"), std::string::npos) << v.detail;
  }
}

TEST(CheckLse, ToleranceGrowsWithTheMagnitude) {
  // |ref| = 1000 allows 1e-5 * 1001 ~ 1e-2.
  AttentionResult ref;
  ref.lse = {1000.0, 0.0};
  EXPECT_TRUE(check_lse(std::vector<float>{1000.005f, 0.0f}, ref).ok);
  EXPECT_FALSE(check_lse(std::vector<float>{1000.02f, 0.0f}, ref).ok);
  EXPECT_TRUE(check_lse(std::vector<float>{1000.0f, 9e-6f}, ref).ok);
  EXPECT_FALSE(check_lse(std::vector<float>{1000.0f, 1.1e-5f}, ref).ok);
}

}  // namespace
}  // namespace mfagen::reference
