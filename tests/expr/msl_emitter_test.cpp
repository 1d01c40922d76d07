#include "expr/msl_emitter.h"

#include <gtest/gtest.h>

#include "test_environment.h"

namespace mfagen::expr {
namespace {

using testing::checked;
using testing::test_environment;

std::string msl(const std::string& text, Type want = Type::real) {
  return to_msl(*checked(text, want), test_environment());
}

TEST(ExprMsl, ReadsLikeTheSpec) {
  EXPECT_EQ(msl("score + bias[clamp(q_idx - kv_idx, -127, 127) + 127]"),
            "score + m.bias[clamp(q_idx - kv_idx, -127, 127) + 127]");
  EXPECT_EQ(msl("q_doc[b, q_idx] == kv_doc[b, kv_idx]", Type::boolean), "m.q_doc[b * m.Sq + q_idx] == "
                                                                         "m.kv_doc[b * m.Sk + kv_idx]");
  EXPECT_EQ(msl("score * prefix"), "score * m.prefix");
  EXPECT_EQ(msl("rel[q_idx - kv_idx + Sk - 1]"), "m.rel[q_idx - kv_idx + m.Sk - 1]");
}

TEST(ExprMsl, ParenthesizesOnlyWherePrecedenceNeedsIt) {
  EXPECT_EQ(msl("(score - 1.0) - (score - 2.0)"), "score - 1.0f - (score - 2.0f)");
  EXPECT_EQ(msl("score / (2.0 * score)"), "score / (2.0f * score)");
  EXPECT_EQ(msl("-(-score)"), "-(-score)");
  EXPECT_EQ(msl("q_idx >= kv_idx || q_idx < 4 && kv_idx > 2", Type::boolean),
            "q_idx >= kv_idx || (q_idx < 4 && kv_idx > 2)");
  EXPECT_EQ(msl("(q_idx < 4) == (kv_idx < 4)", Type::boolean), "(q_idx < 4) == (kv_idx < 4)");
  EXPECT_EQ(msl("!(q_idx < 4)", Type::boolean), "!(q_idx < 4)");
}

TEST(ExprMsl, CallsKeepTheirFunctions) {
  EXPECT_EQ(msl("exp(score) + log(score) + tanh(score) + sqrt(score) + floor(score)"),
            "exp(score) + log(score) + tanh(score) + sqrt(score) + floor(score)");
  EXPECT_EQ(msl("min(score, 1.0) * max(q_idx, 2) + abs(kv_idx) + clamp(score, -1.0, 1.0)"),
            "min(score, 1.0f) * float(max(q_idx, 2)) + float(abs(kv_idx)) + clamp(score, -1.0f, 1.0f)");
  EXPECT_EQ(msl("exp(q_idx)"), "exp(float(q_idx))");
}

TEST(ExprMsl, SpellsConversionsAndIntegerDivision) {
  EXPECT_EQ(msl("q_idx - kv_idx"), "float(q_idx - kv_idx)");
  EXPECT_EQ(msl("select(q_idx > 3, score, 0)"), "(q_idx > 3 ? score : float(0))");
  EXPECT_EQ(msl("float(q_idx // 8 + kv_idx % 8)"), "float(mod_floor_div(q_idx, 8) + mod_floor_mod(kv_idx, 8))");
  EXPECT_EQ(msl("float(int(score))"), "float(mod_to_int(score))");
  EXPECT_EQ(msl_float(0.1), "0.1f");
  EXPECT_EQ(msl_float(3), "3.0f");
  EXPECT_EQ(msl_float(1e-5), "1e-05f");
}

TEST(ExprMsl, ExtentsUseTheCallsSizes) {
  EXPECT_EQ(msl_extent(parse_extent("Sq + Sk - 1")), "m.Sq + m.Sk - 1");
  EXPECT_EQ(msl_extent(parse_extent("2 * Hq")), "2 * m.Hq");
  EXPECT_EQ(msl_extent(parse_extent("255")), "255");
}

}  // namespace
}  // namespace mfagen::expr
