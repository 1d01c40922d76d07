#include "expr/parser.h"

#include <gtest/gtest.h>

#include <string>

namespace mfagen::expr {
namespace {

int error_column(const std::string& text) {
  try {
    parse_expression(text);
  } catch (const ExpressionError& e) {
    return e.column();
  }
  return 0;
}

std::string error_message(const std::string& text) {
  try {
    parse_expression(text);
  } catch (const ExpressionError& e) {
    return e.what();
  }
  return "";
}

TEST(ExprParser, BuildsTreesByPrecedence) {
  const NodePtr n = parse_expression("a + b * c < d || e && !f");
  ASSERT_EQ(n->op, Op::logical_or);
  EXPECT_EQ(n->args[0]->op, Op::less);
  EXPECT_EQ(n->args[0]->args[0]->op, Op::add);
  EXPECT_EQ(n->args[0]->args[0]->args[1]->op, Op::multiply);
  EXPECT_EQ(n->args[1]->op, Op::logical_and);
  EXPECT_EQ(n->args[1]->args[1]->op, Op::logical_not);
}

TEST(ExprParser, SumsAssociateToTheLeft) {
  const NodePtr n = parse_expression("a - b - c");
  ASSERT_EQ(n->op, Op::subtract);
  EXPECT_EQ(n->args[0]->op, Op::subtract);
  EXPECT_EQ(n->args[1]->name, "c");
}

TEST(ExprParser, ReadsLiteralsCallsAndIndices) {
  const NodePtr n = parse_expression("select(doc[b, q_idx] == 3, 2.5e-1, .5)");
  ASSERT_EQ(n->op, Op::call);
  ASSERT_EQ(n->args.size(), 3u);
  EXPECT_EQ(n->args[0]->args[0]->op, Op::read);
  EXPECT_EQ(n->args[0]->args[0]->args.size(), 2u);
  EXPECT_EQ(n->args[0]->args[1]->int_value, 3);
  EXPECT_EQ(n->args[1]->op, Op::float_literal);
  EXPECT_DOUBLE_EQ(n->args[1]->float_value, 0.25);
  EXPECT_DOUBLE_EQ(n->args[2]->float_value, 0.5);
  EXPECT_EQ(parse_expression("true")->op, Op::bool_literal);
}

TEST(ExprParser, RecordsColumns) {
  const NodePtr n = parse_expression("score  +  bias[q_idx]");
  EXPECT_EQ(n->column, 1);  // a binary expression starts at its left operand
  EXPECT_EQ(n->args[1]->column, 11);
  EXPECT_EQ(n->args[1]->args[0]->column, 16);
}

TEST(ExprParser, ErrorsNameTheColumn) {
  EXPECT_EQ(error_column("score +"), 8);
  EXPECT_EQ(error_column("score = 1"), 7);
  EXPECT_EQ(error_column("bias[q_idx"), 11);
  EXPECT_EQ(error_column("min(a, b"), 9);
  EXPECT_EQ(error_column("a < b < c"), 7);
  EXPECT_EQ(error_column("a and b"), 3);
  EXPECT_EQ(error_column("a $ b"), 3);
  EXPECT_EQ(error_column("2x"), 2);
  EXPECT_EQ(error_column("(a + b))"), 8);
  EXPECT_EQ(error_column("f()"), 1);
  EXPECT_EQ(error_column("99999999999"), 1);
  EXPECT_EQ(error_column("1e39"), 1);
}

TEST(ExprParser, ErrorsSayWhatWasExpected) {
  EXPECT_NE(error_message("a & b").find("'&&'"), std::string::npos);
  EXPECT_NE(error_message("a | b").find("'||'"), std::string::npos);
  EXPECT_NE(error_message("a ? b : c").find("select("), std::string::npos);
  EXPECT_NE(error_message("a < b < c").find("'&&'"), std::string::npos);
  EXPECT_NE(error_message("min(a, b").find("expected ')' to close the call"), std::string::npos);
  EXPECT_NE(error_message("").find("end of the expression"), std::string::npos);
}

TEST(ExprParser, RefusesDeepNestingAndLongText) {
  EXPECT_NO_THROW(parse_expression(std::string(60, '(') + "x" + std::string(60, ')')));
  EXPECT_GT(error_column(std::string(100, '(') + "x" + std::string(100, ')')), 0);
  EXPECT_GT(error_column(std::string(200, '-') + "x"), 0);
  EXPECT_GT(error_column(std::string(kMaxExpressionLength + 1, ' ')), 0);
  EXPECT_GT(error_column("score + \xc3\xa9"), 0);
  EXPECT_EQ(error_column("score +\n1"), 8);  // would end the comment the text is pasted into
  EXPECT_EQ(error_column("score\t+ 1"), 6);
}

}  // namespace
}  // namespace mfagen::expr
