#include "expr/derivative.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "expr/msl_emitter.h"
#include "test_environment.h"

namespace mfagen::expr {
namespace {

using testing::checked;
using testing::test_environment;

// A plain float64 evaluation of a checked tree, to compare derivatives with
// central differences of the expression itself.
struct Point {
  double score = 0.3;
  int64_t b = 1, h = 2, q = 5, kv = 3;
  std::array<int64_t, 5> sizes{2, 4, 2, 9, 11};  // B, Hq, Hkv, Sq, Sk
  std::vector<double> scalars{0.75, 1.5};
  std::vector<std::vector<double>> captures;
};

double eval(const Node& n, const Point& p) {
  auto a = [&](size_t i) { return eval(*n.args[i], p); };
  switch (n.op) {
    case Op::int_literal: return double(n.int_value);
    case Op::float_literal: return n.float_value;
    case Op::bool_literal: return n.bool_value;
    case Op::variable:
      switch (n.variable) {
        case Variable::score: return p.score;
        case Variable::b: return double(p.b);
        case Variable::h: return double(p.h);
        case Variable::q_idx: return double(p.q);
        case Variable::kv_idx: return double(p.kv);
        default: return double(p.sizes[size_t(n.variable) - size_t(Variable::B)]);
      }
    case Op::scalar: return p.scalars[n.index];
    case Op::read: {
      const Environment env = test_environment();
      const CaptureDecl& c = env.captures[n.index];
      int64_t flat = 0;
      for (size_t d = 0; d < n.args.size(); ++d) flat = flat * c.extents[d].at(p.sizes) + int64_t(a(d));
      return p.captures[n.index].at(size_t(flat));
    }
    case Op::negate: return -a(0);
    case Op::logical_not: return !a(0);
    case Op::add: return a(0) + a(1);
    case Op::subtract: return a(0) - a(1);
    case Op::multiply: return a(0) * a(1);
    case Op::divide: return a(0) / a(1);
    case Op::floor_divide: return std::floor(a(0) / a(1));
    case Op::modulo: return a(0) - a(1) * std::floor(a(0) / a(1));
    case Op::less: return a(0) < a(1);
    case Op::less_equal: return a(0) <= a(1);
    case Op::greater: return a(0) > a(1);
    case Op::greater_equal: return a(0) >= a(1);
    case Op::equal: return a(0) == a(1);
    case Op::not_equal: return a(0) != a(1);
    case Op::logical_and: return a(0) && a(1);
    case Op::logical_or: return a(0) || a(1);
    case Op::call: break;
    default: return 0;
  }
  switch (n.function) {
    case Function::select: return a(0) ? a(1) : a(2);
    case Function::min: return std::min(a(0), a(1));
    case Function::max: return std::max(a(0), a(1));
    case Function::clamp: return std::min(std::max(a(0), a(1)), a(2));
    case Function::abs: return std::fabs(a(0));
    case Function::exp: return std::exp(a(0));
    case Function::log: return std::log(a(0));
    case Function::tanh: return std::tanh(a(0));
    case Function::sqrt: return std::sqrt(a(0));
    case Function::floor: return std::floor(a(0));
    case Function::to_int: return std::trunc(a(0));
    case Function::to_float: return a(0);
  }
  return 0;
}

Point point_with_captures() {
  Point p;
  const Environment env = test_environment();
  for (const CaptureDecl& c : env.captures) {
    int64_t count = 1;
    for (const LinearForm& e : c.extents) count *= e.at(p.sizes);
    std::vector<double> values(static_cast<size_t>(count));
    for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.7 * double(i) + double(c.name.size()));
    p.captures.push_back(values);
  }
  return p;
}

constexpr double kStep = 1e-6;

void expect_score_derivative(const std::string& text, std::vector<double> scores) {
  const NodePtr f = checked(text);
  const NodePtr slope = derivative_by_score(f);
  Point p = point_with_captures();
  for (double s : scores) {
    p.score = s + kStep;
    const double up = eval(*f, p);
    p.score = s - kStep;
    const double down = eval(*f, p);
    p.score = s;
    EXPECT_NEAR(eval(*slope, p), (up - down) / (2 * kStep), 1e-6 * (1 + std::fabs(up)))
        << text << " at score " << s << "; derivative " << to_msl(*slope, test_environment());
  }
}

TEST(ExprDerivative, MatchesCentralDifferences) {
  const std::vector<double> scores{-2.1, -0.4, 0.3, 1.7};
  expect_score_derivative("score + bias[clamp(q_idx - kv_idx, -127, 127) + 127]", scores);
  expect_score_derivative("score * head_scale[h] - prefix * score * score", scores);
  expect_score_derivative("temperature * tanh(score / temperature)", scores);
  expect_score_derivative("exp(score) / (1.0 + exp(score))", scores);
  expect_score_derivative("log(1.0 + score * score) + sqrt(score * score + 2.0)", scores);
  expect_score_derivative("select(q_idx >= kv_idx, score * 2.0, -score)", scores);
  expect_score_derivative("min(score, 1.0) + max(score, -1.0) + abs(score) + clamp(score, -1.0, 0.5)", scores);
  expect_score_derivative("-(-score) - (score - 3.0) / 2.0 + float(q_idx) * score", scores);
  // Away from the steps of floor and int, where the derivative is 0.
  expect_score_derivative("floor(score) + float(int(score * 10.0))", {-2.13, 0.37, 1.74});
}

TEST(ExprDerivative, FoldsZerosAndOnes) {
  const Environment env = test_environment();
  EXPECT_EQ(to_msl(*derivative_by_score(checked("score + bias[q_idx % 255]")), env), "1.0f");
  EXPECT_EQ(to_msl(*derivative_by_score(checked("bias[q_idx % 255] * 2.0")), env), "0.0f");
  EXPECT_EQ(to_msl(*derivative_by_score(checked("score * head_scale[h]")), env), "m.head_scale[h]");
}

TEST(ExprDerivative, ByEachReadOfAFloatTensor) {
  const NodePtr f = checked("score * head_scale[h] + bias[clamp(q_idx - kv_idx, -127, 127) + 127] * "
                            "head_scale[h] + select(q_doc[b, q_idx] > 0, 1.0, 0.0)");
  const std::vector<const Node*> reads = float_reads(f);
  ASSERT_EQ(reads.size(), 3u);  // head_scale twice (two nodes), bias once; the int tensor is not differentiable
  EXPECT_EQ(reads[0]->name, "head_scale");
  EXPECT_EQ(reads[1]->name, "bias");
  EXPECT_EQ(reads[2]->name, "head_scale");
  const Environment env = test_environment();
  EXPECT_EQ(to_msl(*derivative_by_read(f, reads[0]), env), "score");
  EXPECT_EQ(to_msl(*derivative_by_read(f, reads[1]), env), "m.head_scale[h]");
  EXPECT_EQ(to_msl(*derivative_by_read(f, reads[2]), env), "m.bias[clamp(q_idx - kv_idx, -127, 127) + 127]");
}

}  // namespace
}  // namespace mfagen::expr
