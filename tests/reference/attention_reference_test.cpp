// The float64 reference against cases worked out by hand, one contract rule
// at a time; and the naive in-dtype computation against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "attention_reference.h"
#include "random_inputs.h"

namespace mfagen::reference {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A problem with q = 0, so every visible key gets the same logit (0 unless a
// bias adds to it), and v[j] = j in every component: out is then the average
// index of the visible keys, easy to state by hand.
AttentionProblem uniform_problem(uint64_t seq_q, uint64_t seq_k, CausalMode causal) {
  AttentionProblem p;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = 2;
  p.head_dim_v = 1;
  p.causal = causal;
  p.q.assign(seq_q * 2, 0.0);
  p.k.assign(seq_k * 2, 1.0);
  for (uint64_t j = 0; j < seq_k; ++j) p.v.push_back(static_cast<double>(j));
  return p;
}

TEST(Reference, OneQueryTwoKeysByHand) {
  // D = 4, default scale 1/sqrt(4) = 1/2. q = (1,1,1,1); k0 = 0 gives z0 = 0;
  // k1 = (x,x,x,x) gives z1 = 4x/2 = 2x = ln 3 for x = ln(3)/2. Then
  // P = (1/4, 3/4); with v0 = (2, -1), v1 = (6, 3): out = (5, 2); lse = ln 4.
  AttentionProblem p;
  p.seq_k = 2;
  p.head_dim = 4;
  p.head_dim_v = 2;
  p.q = {1, 1, 1, 1};
  const double x = std::log(3.0) / 2;
  p.k = {0, 0, 0, 0, x, x, x, x};
  p.v = {2, -1, 6, 3};
  AttentionResult r = reference_attention(p);
  ASSERT_EQ(r.out.size(), 2u);
  ASSERT_EQ(r.lse.size(), 1u);
  EXPECT_NEAR(r.out[0], 5.0, 1e-14);
  EXPECT_NEAR(r.out[1], 2.0, 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(4.0), 1e-14);

  // An explicit scale replaces the default: scale 1 doubles the logits, z1 = 2 ln 3,
  // P = (1/10, 9/10), out = (5.6, 2.6), lse = ln 10.
  p.scale = 1.0;
  r = reference_attention(p);
  EXPECT_NEAR(r.out[0], 5.6, 1e-14);
  EXPECT_NEAR(r.out[1], 2.6, 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(10.0), 1e-14);
}

TEST(Reference, LargeLogitsDoNotOverflow) {
  // s = 1000 for both keys: exp(1000) overflows a double, the max subtraction must avoid it.
  AttentionProblem p;
  p.seq_k = 2;
  p.head_dim = 1;
  p.head_dim_v = 1;
  p.scale = 1;
  p.q = {100};
  p.k = {10, 10};
  p.v = {1, 3};
  AttentionResult r = reference_attention(p);
  EXPECT_DOUBLE_EQ(r.out[0], 2.0);
  EXPECT_DOUBLE_EQ(r.lse[0], 1000 + std::log(2.0));
}

TEST(Reference, FullyMaskedRowIsZeroWithMinusInfinityLse) {
  AttentionProblem p = uniform_problem(2, 3, CausalMode::none);
  p.bool_mask = {0, 0, 0,   // row 0 sees nothing
                 1, 0, 1};  // row 1 sees keys 0 and 2
  p.mask_shape = {1, 1, 2, 3};
  AttentionResult r = reference_attention(p);
  EXPECT_EQ(r.out[0], 0.0);
  EXPECT_FALSE(std::signbit(r.out[0]));
  EXPECT_EQ(r.lse[0], -kInfinity);
  EXPECT_DOUBLE_EQ(r.out[1], 1.0);
  EXPECT_DOUBLE_EQ(r.lse[1], std::log(2.0));

  // The same with an additive mask of -inf; finite values shift the logits.
  p.bool_mask.clear();
  p.additive_mask = {-kInfinity, -kInfinity, -kInfinity, std::log(3.0), -kInfinity, 0.0};
  r = reference_attention(p);
  EXPECT_EQ(r.out[0], 0.0);
  EXPECT_EQ(r.lse[0], -kInfinity);
  EXPECT_DOUBLE_EQ(r.out[1], 0.5);  // P = (3/4, 1/4) over keys 0, 2
  EXPECT_DOUBLE_EQ(r.lse[1], std::log(4.0));

  // No keys at all (Sk = 0): every row is empty.
  AttentionProblem none = uniform_problem(2, 0, CausalMode::none);
  r = reference_attention(none);
  EXPECT_EQ(r.out, std::vector<double>({0.0, 0.0}));
  EXPECT_EQ(r.lse, std::vector<double>({-kInfinity, -kInfinity}));
}

TEST(Reference, CausalTopLeftVersusBottomRight) {
  // Sq = 2, Sk = 4. top_left (off 0): row 0 sees {0}, row 1 sees {0,1}.
  // bottom_right (off 2): row 0 sees {0,1,2}, row 1 sees {0,1,2,3}.
  AttentionResult top = reference_attention(uniform_problem(2, 4, CausalMode::top_left));
  EXPECT_DOUBLE_EQ(top.out[0], 0.0);
  EXPECT_DOUBLE_EQ(top.out[1], 0.5);
  EXPECT_DOUBLE_EQ(top.lse[0], 0.0);
  EXPECT_DOUBLE_EQ(top.lse[1], std::log(2.0));
  AttentionResult bottom = reference_attention(uniform_problem(2, 4, CausalMode::bottom_right));
  EXPECT_DOUBLE_EQ(bottom.out[0], 1.0);
  EXPECT_DOUBLE_EQ(bottom.out[1], 1.5);
  EXPECT_DOUBLE_EQ(bottom.lse[0], std::log(3.0));
  EXPECT_DOUBLE_EQ(bottom.lse[1], std::log(4.0));

  // Sq = 3 > Sk = 1, bottom_right (off -2): rows 0 and 1 see no key at all.
  AttentionResult tall = reference_attention(uniform_problem(3, 1, CausalMode::bottom_right));
  EXPECT_EQ(tall.lse[0], -kInfinity);
  EXPECT_EQ(tall.lse[1], -kInfinity);
  EXPECT_DOUBLE_EQ(tall.lse[2], 0.0);
  // top_left with the same shape: every row sees key 0.
  AttentionResult tall_top = reference_attention(uniform_problem(3, 1, CausalMode::top_left));
  for (double lse : tall_top.lse) EXPECT_DOUBLE_EQ(lse, 0.0);
}

TEST(Reference, GqaMapsQueryHeadsToKvHeads) {
  // Hq = 6, Hkv = 2: query heads 0..2 read kv head 0, 3..5 read kv head 1
  // (h / (Hq / Hkv)), not h % Hkv. v of kv head 0 is 10, of kv head 1 is 20.
  AttentionProblem p;
  p.heads_q = 6;
  p.heads_kv = 2;
  p.head_dim = 1;
  p.head_dim_v = 1;
  p.q.assign(6, 0.5);
  p.k = {1, 1};
  p.v = {10, 20};
  AttentionResult r = reference_attention(p);
  EXPECT_EQ(r.out, std::vector<double>({10, 10, 10, 20, 20, 20}));
  // Batches keep their own kv heads: batch 1's kv heads hold 30 and 40.
  p.batch = 2;
  p.q.assign(12, 0.5);
  p.k = {1, 1, 1, 1};
  p.v = {10, 20, 30, 40};
  r = reference_attention(p);
  EXPECT_EQ(r.out, std::vector<double>({10, 10, 10, 20, 20, 20, 30, 30, 30, 40, 40, 40}));
}

TEST(Reference, SlidingWindow) {
  // Sq = Sk = 5, causal none (off 0), window (1, 0): row i sees {i-1, i}.
  AttentionProblem p = uniform_problem(5, 5, CausalMode::none);
  p.window = std::pair<int64_t, int64_t>{1, 0};
  AttentionResult r = reference_attention(p);
  EXPECT_DOUBLE_EQ(r.out[0], 0.0);
  for (int i = 1; i < 5; ++i) EXPECT_DOUBLE_EQ(r.out[i], i - 0.5) << i;
  EXPECT_TRUE(key_visible(p, 0, 0, 3, 2));
  EXPECT_FALSE(key_visible(p, 0, 0, 3, 1));
  EXPECT_FALSE(key_visible(p, 0, 0, 3, 4));

  // (-1, 1): unbounded on the left, one key ahead: row i sees {0 .. min(i+1, 4)}.
  p.window = std::pair<int64_t, int64_t>{-1, 1};
  r = reference_attention(p);
  const double expected[] = {0.5, 1.0, 1.5, 2.0, 2.0};
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(r.out[i], expected[i]) << i;

  // Sq = 2, Sk = 4 with causal none: the window is centred at i + (Sk - Sq).
  AttentionProblem q = uniform_problem(2, 4, CausalMode::none);
  q.window = std::pair<int64_t, int64_t>{0, 0};
  r = reference_attention(q);
  EXPECT_DOUBLE_EQ(r.out[0], 2.0);
  EXPECT_DOUBLE_EQ(r.out[1], 3.0);
  // With causal top_left the window is centred at i instead: (1, 5) and causal
  // together give row 0 {0}, row 1 {0, 1}.
  q.causal = CausalMode::top_left;
  q.window = std::pair<int64_t, int64_t>{1, 5};
  r = reference_attention(q);
  EXPECT_DOUBLE_EQ(r.out[0], 0.0);
  EXPECT_DOUBLE_EQ(r.out[1], 0.5);
  // A window that leaves a row empty: (0, 0) centred at i + off with bottom_right Sq > Sk.
  AttentionProblem tall = uniform_problem(3, 1, CausalMode::none);
  tall.window = std::pair<int64_t, int64_t>{0, 0};  // off = -2: row 2 sees key 0 only
  r = reference_attention(tall);
  EXPECT_EQ(r.lse[0], -kInfinity);
  EXPECT_EQ(r.lse[1], -kInfinity);
  EXPECT_DOUBLE_EQ(r.lse[2], 0.0);
}

TEST(Reference, Softcap) {
  // z = (0, 10) with cap 5: s = (0, 5 tanh 2).
  AttentionProblem p;
  p.seq_k = 2;
  p.head_dim = 1;
  p.head_dim_v = 1;
  p.scale = 1;
  p.softcap = 5;
  p.q = {1};
  p.k = {0, 10};
  p.v = {0, 1};
  AttentionResult r = reference_attention(p);
  const double s1 = 5 * std::tanh(2.0);
  EXPECT_NEAR(r.out[0], std::exp(s1) / (1 + std::exp(s1)), 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(1 + std::exp(s1)), 1e-14);
}

TEST(Reference, Alibi) {
  // Sq = 1, Sk = 3, causal none: off = 2, distances |2 - j| = (2, 1, 0).
  // Slope 0.5 gives s = (-1, -0.5, 0).
  AttentionProblem p = uniform_problem(1, 3, CausalMode::none);
  p.alibi_slopes = {0.5};
  AttentionResult r = reference_attention(p);
  const double e[] = {std::exp(-1.0), std::exp(-0.5), 1.0};
  const double sum = e[0] + e[1] + e[2];
  EXPECT_NEAR(r.out[0], (e[1] + 2 * e[2]) / sum, 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(sum), 1e-15);

  // top_left puts the query at position 0: distances (0, 1, 2).
  p.causal = CausalMode::top_left;
  r = reference_attention(p);
  EXPECT_DOUBLE_EQ(r.out[0], 0.0);  // causal also hides keys 1 and 2
  p.causal = CausalMode::none;

  // Per-(batch, head) slopes: batch 1 uses slope 0, a uniform average.
  p.batch = 2;
  p.q.assign(4, 0.0);
  p.k.assign(12, 1.0);
  p.v = {0, 1, 2, 0, 1, 2};
  p.alibi_slopes = {0.5, 0.0};
  r = reference_attention(p);
  EXPECT_NEAR(r.out[0], (e[1] + 2 * e[2]) / sum, 1e-15);
  EXPECT_DOUBLE_EQ(r.out[1], 1.0);
}

TEST(Reference, BroadcastMasksEqualTheirExpansion) {
  // B = 2, Hq = 2, Sq = 3, Sk = 4 with random inputs; a (1,1,Sq,Sk) mask and a
  // (B,1,1,Sk) key-padding mask, each compared with its full expansion.
  AttentionProblem p;
  p.batch = 2;
  p.heads_q = 2;
  p.heads_kv = 2;
  p.seq_q = 3;
  p.seq_k = 4;
  p.head_dim = 3;
  p.head_dim_v = 2;
  p.q = random_tensor(2 * 2 * 3 * 3, 1, ElementType::float32);
  p.k = random_tensor(2 * 2 * 4 * 3, 2, ElementType::float32);
  p.v = random_tensor(2 * 2 * 4 * 2, 3, ElementType::float32);

  auto expand = [&](const auto& mask, std::array<uint64_t, 4> shape) {
    std::remove_cvref_t<decltype(mask)> full;
    for (uint64_t b = 0; b < 2; ++b)
      for (uint64_t h = 0; h < 2; ++h)
        for (uint64_t i = 0; i < 3; ++i)
          for (uint64_t j = 0; j < 4; ++j) {
            uint64_t mb = shape[0] == 1 ? 0 : b, mh = shape[1] == 1 ? 0 : h;
            uint64_t mi = shape[2] == 1 ? 0 : i, mj = shape[3] == 1 ? 0 : j;
            full.push_back(mask[((mb * shape[1] + mh) * shape[2] + mi) * shape[3] + mj]);
          }
    return full;
  };

  AttentionProblem small = p, full = p;
  small.bool_mask = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0};  // row 1 of every (b, h) is empty
  small.mask_shape = {1, 1, 3, 4};
  full.bool_mask = expand(small.bool_mask, small.mask_shape);
  full.mask_shape = {2, 2, 3, 4};
  AttentionResult a = reference_attention(small), b = reference_attention(full);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.lse, b.lse);
  EXPECT_EQ(a.lse[1], -kInfinity);
  EXPECT_EQ(a.lse[4], -kInfinity);

  small.bool_mask.clear();
  full.bool_mask.clear();
  small.additive_mask = {0.0, -1.5, -kInfinity, 2.0, 0.25, 0.0, -kInfinity, -kInfinity};  // (B,1,1,Sk): per-batch key padding + bias
  small.mask_shape = {2, 1, 1, 4};
  full.additive_mask = expand(small.additive_mask, small.mask_shape);
  a = reference_attention(small);
  b = reference_attention(full);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.lse, b.lse);
  EXPECT_FALSE(key_visible(small, 0, 1, 2, 2));
  EXPECT_TRUE(key_visible(small, 1, 1, 2, 2 - 1));
  EXPECT_FALSE(key_visible(small, 1, 0, 0, 3));

  // The additive values enter the logits: check one row against the formula.
  // Batch 0, head 0, row 0: keys 0, 1, 3 visible with biases 0, -1.5, 2.
  const double scale = 1 / std::sqrt(3.0);
  double s[4], max = -kInfinity;
  const double bias[4] = {0.0, -1.5, 0.0, 2.0};
  for (int j : {0, 1, 3}) {
    double dot = 0;
    for (int d = 0; d < 3; ++d) dot += p.q[d] * p.k[j * 3 + d];
    s[j] = scale * dot + bias[j];
    max = std::max(max, s[j]);
  }
  double sum = 0, out0 = 0;
  for (int j : {0, 1, 3}) sum += std::exp(s[j] - max);
  for (int j : {0, 1, 3}) out0 += std::exp(s[j] - max) / sum * p.v[j * 2];
  EXPECT_NEAR(a.out[0], out0, 1e-14);
  EXPECT_NEAR(a.lse[0], max + std::log(sum), 1e-14);
}

TEST(Reference, SinkIsOneMoreSoftmaxColumnWithoutValue) {
  // Three equal logits (q = 0) and v = 0, 1, 2: without a sink out = 1 and
  // lse = ln 3. A sink of logit ln 3 weighs as much as the three keys
  // together: out halves to 1/2 and lse = ln 6.
  AttentionProblem p = uniform_problem(1, 3, CausalMode::none);
  p.sinks = {std::log(3.0)};
  AttentionResult r = reference_attention(p);
  EXPECT_NEAR(r.out[0], 0.5, 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(6.0), 1e-14);
  // A sink of -inf is no sink.
  p.sinks = {-kInfinity};
  r = reference_attention(p);
  EXPECT_NEAR(r.out[0], 1.0, 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(3.0), 1e-14);
  // A row that sees no key: out 0, lse the sink (bottom_right, Sq > Sk: query 0 sees nothing).
  p = uniform_problem(5, 3, CausalMode::bottom_right);
  p.sinks = {0.75};
  r = reference_attention(p);
  EXPECT_EQ(r.out[0], 0.0);
  EXPECT_EQ(r.lse[0], 0.75);
  EXPECT_NEAR(r.lse[2], std::log(1.0 + std::exp(0.75)), 1e-14);  // query 2 sees key 0 only
  // The naive float32 variant follows it.
  const AttentionResult naive = naive_attention_in_dtype(p, ElementType::float32);
  for (size_t i = 0; i < r.lse.size(); ++i) EXPECT_NEAR(naive.lse[i], r.lse[i], 1e-6);
}

TEST(Reference, RejectsInconsistentProblems) {
  AttentionProblem p = uniform_problem(2, 3, CausalMode::none);
  EXPECT_NO_THROW(validate(p));
  AttentionProblem bad = p;
  bad.heads_q = 3;
  bad.heads_kv = 2;
  EXPECT_THROW(reference_attention(bad), std::invalid_argument);
  bad = p;
  bad.q.pop_back();
  EXPECT_THROW(reference_attention(bad), std::invalid_argument);
  bad = p;
  bad.bool_mask = {1, 1};
  bad.mask_shape = {1, 1, 2, 1};  // fine
  EXPECT_NO_THROW(validate(bad));
  bad.mask_shape = {1, 1, 1, 2};  // 2 is neither 1 nor Sk = 3
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad = p;
  bad.alibi_slopes = {1, 2};
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad = p;
  bad.additive_mask = {kInfinity};
  bad.mask_shape = {1, 1, 1, 1};
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad = p;
  bad.window = std::pair<int64_t, int64_t>{-2, 0};
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad = p;
  bad.v[0] = std::nan("");
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad = p;
  bad.sinks = {1, 2};  // one per q head
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad.sinks = {std::nan("")};
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad.sinks = {kInfinity};
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad.sinks = {-kInfinity};
  EXPECT_NO_THROW(validate(bad));
}

// A random problem with every feature switched on, inputs rounded to `type`.
AttentionProblem random_problem(ElementType type, uint64_t seq_k = 96) {
  AttentionProblem p;
  p.batch = 2;
  p.heads_q = 4;
  p.heads_kv = 2;
  p.seq_q = 24;
  p.seq_k = seq_k;
  p.head_dim = 64;
  p.head_dim_v = 32;
  p.causal = CausalMode::bottom_right;
  p.q = random_tensor(p.batch * p.heads_q * p.seq_q * p.head_dim, 11, type);
  p.k = random_tensor(p.batch * p.heads_kv * p.seq_k * p.head_dim, 12, type);
  p.v = random_tensor(p.batch * p.heads_kv * p.seq_k * p.head_dim_v, 13, type);
  return p;
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t n = 0; n < a.size(); ++n) m = std::max(m, std::fabs(a[n] - b[n]));
  return m;
}

TEST(Naive, Float32IsCloseAndFloat16MeasurablyWorse) {
  double error[3];
  const ElementType types[3] = {ElementType::float32, ElementType::bfloat16, ElementType::float16};
  for (int t = 0; t < 3; ++t) {
    AttentionProblem p = random_problem(types[t]);
    AttentionResult ref = reference_attention(p);
    AttentionResult naive = naive_attention_in_dtype(p, types[t]);
    error[t] = max_abs_difference(naive.out, ref.out);
    // Same visibility: empty rows agree exactly.
    for (size_t n = 0; n < ref.lse.size(); ++n) EXPECT_EQ(ref.lse[n] == -kInfinity, naive.lse[n] == -kInfinity);
    EXPECT_LT(max_abs_difference(naive.lse, ref.lse), types[t] == ElementType::float32 ? 1e-5 : 0.1) << to_string(types[t]);
  }
  EXPECT_LT(error[0], 1e-6);     // float32: a few ulps of O(1) values
  EXPECT_GT(error[2], 1e-4);     // float16: ~2^-11 relative per operation
  EXPECT_GT(error[2], 100 * error[0]);
  EXPECT_GT(error[1], error[2]);  // bfloat16 keeps only 8 significant bits
}

TEST(Naive, FollowsTheFeaturesOfTheReference) {
  // With softcap, ALiBi, window and an additive mask the naive float32 result
  // still tracks the reference closely (same rules, only rounding differs).
  AttentionProblem p = random_problem(ElementType::float32, 40);
  p.causal = CausalMode::none;
  p.window = std::pair<int64_t, int64_t>{8, 3};
  p.softcap = 2.5;
  p.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  p.additive_mask = random_tensor(p.seq_k, 5, ElementType::float32);
  p.additive_mask[3] = -kInfinity;
  p.mask_shape = {1, 1, 1, p.seq_k};
  AttentionResult ref = reference_attention(p);
  AttentionResult naive = naive_attention_in_dtype(p, ElementType::float32);
  EXPECT_LT(max_abs_difference(naive.out, ref.out), 1e-6);
  // Scaling the softcap way up makes it a no-op: compare with no softcap.
  AttentionProblem capped = p, plain = p;
  capped.softcap = 1e9;
  plain.softcap = 0;
  EXPECT_LT(max_abs_difference(reference_attention(capped).out, reference_attention(plain).out), 1e-12);
}

TEST(Naive, RejectsInputsNotRoundedToTheType) {
  AttentionProblem p = random_problem(ElementType::float32, 8);
  EXPECT_THROW(naive_attention_in_dtype(p, ElementType::float16), std::invalid_argument);
  EXPECT_NO_THROW(naive_attention_in_dtype(p, ElementType::float32));
}

}  // namespace
}  // namespace mfagen::reference
