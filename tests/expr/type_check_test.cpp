#include "expr/type_check.h"

#include <gtest/gtest.h>

#include <string>

#include "test_environment.h"

namespace mfagen::expr {
namespace {

using testing::checked;

std::string error_of(const std::string& text, Type want = Type::real, bool score_allowed = true) {
  try {
    checked(text, want, score_allowed);
  } catch (const ExpressionError& e) {
    return e.what();
  }
  return "";
}

int column_of(const std::string& text, Type want = Type::real) {
  try {
    checked(text, want);
  } catch (const ExpressionError& e) {
    return e.column();
  }
  return 0;
}

TEST(ExprTypes, ResolvesNamesAndPromotes) {
  const NodePtr n = checked("score * head_scale[h] + prefix - q_idx");
  EXPECT_EQ(n->type, Type::real);
  // q_idx is promoted explicitly where it meets a float.
  ASSERT_EQ(n->op, Op::subtract);
  EXPECT_EQ(n->args[1]->op, Op::call);
  EXPECT_EQ(n->args[1]->function, Function::to_float);
  EXPECT_EQ(n->args[0]->args[1]->op, Op::scalar);
  EXPECT_EQ(n->args[0]->args[1]->index, 0u);
  // An integer score_mod becomes a float; mask_mod stays a bool.
  EXPECT_EQ(checked("q_idx - kv_idx")->type, Type::real);
  EXPECT_EQ(checked("q_doc[b, q_idx] == kv_doc[b, kv_idx]", Type::boolean, false)->type, Type::boolean);
  EXPECT_EQ(checked("min(q_idx, 3)", Type::integer)->type, Type::integer);
  EXPECT_EQ(checked("7 / 2")->op, Op::divide);
}

TEST(ExprTypes, RefusesWrongTypesWithTheirColumn) {
  EXPECT_EQ(column_of("score && true"), 1);
  EXPECT_NE(error_of("score && true").find("takes bools"), std::string::npos);
  EXPECT_EQ(column_of("q_idx // 2.0"), 10);
  EXPECT_EQ(column_of("score + (q_idx < 3)"), 10);
  EXPECT_NE(error_of("q_idx < kv_idx").find("must be a number"), std::string::npos);
  EXPECT_NE(error_of("score + 1", Type::boolean).find("must be a bool"), std::string::npos);
  EXPECT_NE(error_of("select(q_idx, 1, 2)").find("takes bools"), std::string::npos);
  EXPECT_NE(error_of("select(true, 1, false)").find("numbers or both bools"), std::string::npos);
  EXPECT_NE(error_of("exp(true)").find("takes numbers"), std::string::npos);
  EXPECT_NE(error_of("bias[1.5]").find("indices are integers"), std::string::npos);
}

TEST(ExprTypes, RefusesUnknownNamesAndMisuse) {
  EXPECT_EQ(column_of("score + alpha"), 9);
  EXPECT_NE(error_of("score + alpha").find("unknown name 'alpha'"), std::string::npos);
  EXPECT_NE(error_of("a and b").find("&&"), std::string::npos);
  EXPECT_NE(error_of("score + bias").find("bias[...]"), std::string::npos);
  EXPECT_NE(error_of("score + bias(1)").find("bias[...]"), std::string::npos);
  EXPECT_NE(error_of("score + table[1]").find("not a captured tensor"), std::string::npos);
  EXPECT_NE(error_of("cosh(score)").find("unknown function 'cosh'"), std::string::npos);
  EXPECT_NE(error_of("min(score)").find("takes 2 argument(s), found 1"), std::string::npos);
  EXPECT_NE(error_of("q_doc[q_idx]").find("has 2 dimension(s), read with 1"), std::string::npos);
  EXPECT_NE(error_of("score > 0", Type::boolean, false).find("mask_mod cannot read score"), std::string::npos);
  EXPECT_NE(error_of("exp + 1").find("is a function"), std::string::npos);
}

TEST(ExprBounds, ProvesReadsInsideTheirExtents) {
  EXPECT_NO_THROW(checked("score + rel[q_idx - kv_idx + Sk - 1]"));
  EXPECT_NO_THROW(checked("score + bias[clamp(q_idx - kv_idx, -127, 127) + 127]"));
  EXPECT_NO_THROW(checked("score + bias[min(max(kv_idx - q_idx + 127, 0), 254)]"));
  EXPECT_NO_THROW(checked("score + bias[(q_idx - kv_idx) % 255]"));
  EXPECT_NO_THROW(checked("score + bias[abs(clamp(q_idx - kv_idx, -254, 254))]"));
  EXPECT_NO_THROW(checked("score + bias[select(q_idx > kv_idx, 3, 200)]"));
  EXPECT_NO_THROW(checked("score * head_scale[h]"));
  // One tensor for the positions of q and k (Sq = Sk in self-attention): a clamp to Sk - 1 proves it.
  EXPECT_NO_THROW(checked("kv_doc[b, clamp(q_idx, 0, Sk - 1)] == kv_doc[b, kv_idx]", Type::boolean, false));
  EXPECT_NO_THROW(checked("kv_doc[b, min(q_idx, Sk - 1)] == 0", Type::boolean, false));
  EXPECT_NO_THROW(checked("q_doc[b, q_idx] == kv_doc[b, kv_idx]", Type::boolean, false));
  EXPECT_NO_THROW(checked("score + bias[clamp(int(log(float(abs(q_idx - kv_idx)) + 1.0) * 8.0), 0, 254)]"
));
}

TEST(ExprBounds, RefusesReadsThatMayLeaveTheirExtents) {
  const std::string e = error_of("score + rel[q_idx - kv_idx]");
  EXPECT_NE(e.find("index 0 of rel may be out of range: it spans [-Sk + 1, Sq - 1] but must stay in "
                   "[0, Sq + Sk - 2]"),
            std::string::npos)
      << e;
  EXPECT_EQ(column_of("score + rel[q_idx - kv_idx]"), 13);
  EXPECT_NE(error_of("score + bias[q_idx]").find("spans [0, Sq - 1]"), std::string::npos);
  EXPECT_NE(error_of("kv_doc[b, q_idx] == 0", Type::boolean).find("index 1 of kv_doc"), std::string::npos);
  EXPECT_NE(error_of("score + bias[int(score)]").find("[unbounded, unbounded]"), std::string::npos);
  EXPECT_NE(error_of("score + bias[clamp(q_idx, 0, 255)]").find("may be out of range"), std::string::npos);
  EXPECT_NE(error_of("score + bias[q_doc[b, q_idx]]").find("may be out of range"), std::string::npos);
  EXPECT_NE(error_of("score + head_scale[h + 1]").find("[1, Hq]"), std::string::npos);
  EXPECT_NE(error_of("score + bias[q_idx * q_idx]").find("may be out of range"), std::string::npos);
  // Bounds whose arithmetic would overflow are unknown, never wrapped.
  EXPECT_NE(error_of("score + bias[2147483647 * 2147483647 * 2147483647 * q_idx]").find("[unbounded, unbounded]"),
            std::string::npos);
}

TEST(ExprBounds, ExtentsAreLinearFormsOfTheSizes) {
  EXPECT_EQ(parse_extent("Sq + Sk - 1").text(), "Sq + Sk - 1");
  EXPECT_EQ(parse_extent("2 * Hq").text(), "2*Hq");
  EXPECT_EQ(parse_extent("255").text(), "255");
  EXPECT_THROW(parse_extent("Sq - 1"), ExpressionError);
  EXPECT_THROW(parse_extent("0"), ExpressionError);
  EXPECT_THROW(parse_extent("q_idx"), ExpressionError);
  EXPECT_THROW(parse_extent("Sq * Sk"), ExpressionError);
  EXPECT_THROW(parse_extent("score"), ExpressionError);
  EXPECT_THROW(parse_extent("2147483647 * 2147483647 * Sq"), ExpressionError);
  EXPECT_THROW(parse_extent("2147483647 * 2147483647 * 2147483647 * Sq"), ExpressionError);
}

}  // namespace
}  // namespace mfagen::expr
