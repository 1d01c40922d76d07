// score_mod and mask_mod (DESIGN.md section 13) compiled into forward and
// backward kernels, run on the cpu backend with every detector on, against
// the float64 reference applying the same functions written plainly in C++
// (score_functions_harness.cpp): each recipe of the issue (relative position
// bias, document masking, prefix-LM, T5 buckets) and one reading every kind of
// input, forward and backward (dq, dk, dv), in every dtype, with built-in
// features beside them; and the built-in features written as expressions
// against the built-in features' reference.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "forward_harness.h"
#include "selftest/case_inputs.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;
using spec::Kind;

ForwardCase base(Kind kind, DType dtype, uint64_t sq, uint64_t sk) {
  ForwardCase c;
  c.kind = kind;
  c.dtype = dtype;
  c.head_dim = 64;
  c.batch = 2;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.seq_q = sq;
  c.seq_k = sk;
  return c;
}

RecipeShape shape_of(const ForwardCase& c) { return {c.batch, c.heads_q, c.seq_q, c.seq_k}; }

std::vector<ForwardCase> recipe_cases() {
  std::vector<ForwardCase> all;
  for (Kind kind : {Kind::forward, Kind::backward}) {
    // Backward cases are smaller: three launches, each re-checked by every detector.
    const uint64_t scale = kind == Kind::forward ? 2 : 1;
    for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
      ForwardCase c = base(kind, t, 35 * scale, 45 * scale);
      c.mods = relative_bias_case(shape_of(c), 11);
      all.push_back(c);
    }
    ForwardCase c = base(kind, DType::float16, 50 * scale, 50 * scale);
    c.causal = Causal::bottom_right;
    c.mods = document_mask_case(shape_of(c), 12, 4);
    all.push_back(c);
    c = base(kind, DType::float32, 30 * scale, 40 * scale);
    c.mods = prefix_lm_case(shape_of(c), 13);
    all.push_back(c);
    c = base(kind, DType::bfloat16, 40 * scale, 100 * scale);
    c.mods = t5_bucket_case(shape_of(c), 14);
    all.push_back(c);
    c = base(kind, DType::float32, 45, 70);
    c.mods = everything_case(shape_of(c), 15);
    c.softcap = 30;
    c.alibi = true;
    c.mask = spec::MaskKind::additive;
    all.push_back(c);
    c = base(kind, DType::float16, 33, 90);
    c.head_dim = 40;
    c.window = {{20, 5}};
    c.mods = document_mask_case(shape_of(c), 16, 3);
    c.tiles = spec::Tiles{16, 32, 2};
    all.push_back(c);
    // Documents of 48 tokens over 32-key blocks: blocks wholly hidden
    // (skipped), wholly visible (no check pair by pair), partial only by
    // mask_mod (a document boundary inside) and partial by the causal diagonal.
    c = base(kind, DType::float16, 160, 160);
    c.batch = 1;
    c.causal = Causal::bottom_right;
    c.tiles = spec::Tiles{32, 32, 2};
    c.mods = aligned_documents_case(shape_of(c), 48);
    all.push_back(c);
  }
  // With dropout and sinks.
  ForwardCase c = base(Kind::backward, DType::float16, 40, 60);
  c.mods = relative_bias_case(shape_of(c), 17);
  c.dropout = reference::DropoutOptions{0.25, 77, 3};
  c.sinks = true;
  all.push_back(c);
  return all;
}

class ScoreFunctionsKernel : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(ScoreFunctionsKernel, MatchesTheFloat64ReferenceForwardAndBackward) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
}

std::string case_name(const ::testing::TestParamInfo<ForwardCase>& info) {
  return std::to_string(info.index) + "_" + info.param.mods->recipe + "_" + make_spec(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Recipes, ScoreFunctionsKernel, ::testing::ValuesIn(recipe_cases()), case_name);

// Run to run, the backward writes the same bits: dQ, dK, dV and the captured
// tables' gradients (added in a fixed order, no atomics).
TEST(ScoreFunctionsBackward, BitIdenticalRunToRunWithCapturedGradients) {
  ForwardCase c = base(Kind::backward, DType::float16, 40, 60);
  c.mods = everything_case(shape_of(c), 21);
  const ForwardOutcome a = run_forward_case(c), b = run_forward_case(c);
  ASSERT_TRUE(a.ok()) << a.report();
  ASSERT_EQ(a.gradient_values.size(), 5u);  // dq, dk, dv, d_rel, d_head_scale
  EXPECT_EQ(a.gradient_values, b.gradient_values);
}

// score_mod and mask_mod in split-K decode kernels, dense and on a paged
// cache: rows are the (head, query) pairs of a GQA group, each scored and
// masked with its own h and q_idx.
TEST(ScoreFunctionsDecode, ScoreModAndMaskModMatchTheFloat64Reference) {
  for (bool paged : {false, true}) {
    ForwardCase c = base(Kind::decode, DType::float16, 3, 600);
    c.heads_q = 8;
    c.causal = Causal::bottom_right;
    c.splits = 4;
    c.mods = relative_bias_case(shape_of(c), 41);
    if (paged) {
      c.page_size = 16;
      c.cache_lengths = {600, 250};
    }
    const ForwardOutcome outcome = run_forward_case(c);
    EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
  }
  // mask_mod too, decided pair by pair (a decode block's rows are a GQA group's (head, query) pairs).
  for (bool paged : {false, true}) {
    ForwardCase c = base(Kind::decode, DType::bfloat16, 2, 500);
    c.heads_q = 8;
    c.splits = 3;
    c.mods = document_mask_case(shape_of(c), 43, 3);
    if (paged) {
      c.page_size = 16;
      c.cache_lengths = {500, 320};
    }
    const ForwardOutcome outcome = run_forward_case(c);
    EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
  }
}

// score_mod and mask_mod on quantized caches (q8_0, q4_0, fp8_e4m3): the
// functions act on the scores of the dequantized keys, so every cache a
// serving engine keeps takes them, dense or paged, forward or decode. The
// reference dequantizes with reference/quantized_kv and applies the same
// functions in float64.
TEST(ScoreFunctionsQuantizedCache, ScoreModAndMaskModMatchTheFloat64Reference) {
  struct Variant {
    Kind kind;
    spec::KvDType kv;
    bool paged;
  };
  for (const Variant v : {Variant{Kind::forward, spec::KvDType::q8_0, false},
                          Variant{Kind::forward, spec::KvDType::q4_0, true},
                          Variant{Kind::decode, spec::KvDType::fp8_e4m3, false},
                          Variant{Kind::decode, spec::KvDType::q8_0, true}}) {
    const bool decode = v.kind == Kind::decode;
    ForwardCase c = base(v.kind, DType::float16, decode ? 2 : 40, 300);
    c.kv_dtype = v.kv;
    c.causal = Causal::bottom_right;
    if (decode) {
      c.heads_q = 8;
      c.splits = 3;
    }
    if (v.paged) {
      c.page_size = 16;
      c.cache_lengths = {300, 170};
    }
    c.mods = relative_bias_case(shape_of(c), 51);
    const ForwardOutcome with_bias = run_forward_case(c);
    EXPECT_TRUE(with_bias.ok()) << c.describe() << "\n" << with_bias.report();
    c.mods = document_mask_case(shape_of(c), 53, 3);
    const ForwardOutcome with_documents = run_forward_case(c);
    EXPECT_TRUE(with_documents.ok()) << c.describe() << "\n" << with_documents.report();
  }
}

// A BlockMask reused: the block classes computed in a call of their own
// (BlockClasses::only) and handed to the forward (given) give the float64
// reference's results and the very bits of the forward that computes them.
TEST(ScoreFunctionsBlockMask, ClassesComputedOnceAndReusedGiveTheSameBits) {
  ForwardCase c = base(Kind::forward, DType::float16, 90, 110);
  c.causal = Causal::bottom_right;
  c.mods = document_mask_case(shape_of(c), 31, 5);
  const ForwardOutcome computed = run_forward_case(c);
  c.reuse_block_classes = true;
  const ForwardOutcome reused = run_forward_case(c);
  ASSERT_TRUE(computed.ok()) << computed.report();
  ASSERT_TRUE(reused.ok()) << reused.report();
  EXPECT_EQ(computed.out_values, reused.out_values);
  EXPECT_EQ(computed.lse_values, reused.lse_values);
}

// Built-in features written as expressions: judged against the reference of
// the built-in feature itself (the case's problem carries the built-in).
std::vector<ForwardCase> builtin_cases() {
  std::vector<ForwardCase> all;
  for (Kind kind : {Kind::forward, Kind::backward}) {
    ForwardCase c = base(kind, DType::float16, 50, 80);
    c.mods = causal_expression_case(shape_of(c));
    all.push_back(c);
    c = base(kind, DType::float32, 64, 64);
    c.mods = window_expression_case(shape_of(c), 9, 4);
    all.push_back(c);
    c = base(kind, DType::bfloat16, 40, 70);
    c.mods = softcap_expression_case(4.0);
    c.q_scale = 3;
    all.push_back(c);
    c = base(kind, DType::float16, 40, 70);
    c.mods = alibi_expression_case(shape_of(c), case_alibi_slopes(c));
    all.push_back(c);
  }
  return all;
}

// The same case with the built-in feature the expressions spell.
ForwardCase as_builtin(const ForwardCase& c) {
  ForwardCase b = c;
  b.mods = nullptr;
  const std::string& r = c.mods->recipe;
  if (r == "causal_as_mask_mod") b.causal = Causal::bottom_right;
  if (r == "window_as_mask_mod") b.window = {{9, 4}};
  if (r == "softcap_as_score_mod") b.softcap = 4.0;
  if (r == "alibi_as_score_mod") b.alibi = true;
  return b;
}

class BuiltinsAsExpressions : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(BuiltinsAsExpressions, MatchTheBuiltinFeature) {
  const ForwardCase builtin = as_builtin(GetParam());
  // The expression kernel, judged by the reference of the built-in feature.
  ForwardCase c = GetParam();
  c.adjust_reference = [builtin](reference::AttentionProblem& p) {
    p.causal = selftest::reference_causal(builtin.causal);
    p.window = builtin.window;
    p.softcap = builtin.softcap;
    if (builtin.alibi) p.alibi_slopes = case_alibi_slopes(builtin);
  };
  const ForwardOutcome expression = run_forward_case(c);
  EXPECT_TRUE(expression.ok()) << c.describe() << "\n" << expression.report();
  // And beside the built-in kernel: the same values within the dtype's tolerance.
  const ForwardOutcome kernel = run_forward_case(builtin);
  ASSERT_TRUE(kernel.ok()) << kernel.report();
  ASSERT_EQ(expression.out_values.size(), kernel.out_values.size());
  const double tolerance = c.dtype == DType::float32 ? 5e-5 : 2e-2;
  double worst = 0;
  for (size_t i = 0; i < expression.out_values.size(); ++i)
    worst = std::max(worst, double(std::fabs(expression.out_values[i] - kernel.out_values[i])));
  EXPECT_LE(worst, tolerance) << c.describe();
  ASSERT_EQ(expression.gradient_values.size(), kernel.gradient_values.size());
  for (size_t g = 0; g < expression.gradient_values.size(); ++g) {
    double worst_g = 0;
    for (size_t i = 0; i < expression.gradient_values[g].size(); ++i)
      worst_g = std::max(worst_g, double(std::fabs(expression.gradient_values[g][i] - kernel.gradient_values[g][i])));
    EXPECT_LE(worst_g, 3 * tolerance) << c.describe() << " gradient " << g;
  }
}

INSTANTIATE_TEST_SUITE_P(Builtins, BuiltinsAsExpressions, ::testing::ValuesIn(builtin_cases()), case_name);

}  // namespace
}  // namespace mfagen::test
