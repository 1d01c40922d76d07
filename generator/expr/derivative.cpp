#include "expr/derivative.h"

#include <functional>

namespace mfagen::expr {

namespace {

// Zero is nullptr throughout; the builders below fold it and one away.
NodePtr real_literal(double v, int column) {
  auto n = std::make_shared<Node>();
  n->op = Op::float_literal;
  n->type = Type::real;
  n->float_value = v;
  n->column = column;
  return n;
}

bool is_one(const NodePtr& n) { return n && n->op == Op::float_literal && n->float_value == 1.0; }

NodePtr make(Op op, Type type, std::vector<NodePtr> args) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->type = type;
  n->column = args.empty() ? 1 : args[0]->column;
  n->args = std::move(args);
  return n;
}

NodePtr add(NodePtr a, NodePtr b) {
  if (!a) return b;
  if (!b) return a;
  return make(Op::add, Type::real, {a, b});
}

NodePtr negate(NodePtr a) { return a ? make(Op::negate, Type::real, {a}) : nullptr; }

NodePtr subtract(NodePtr a, NodePtr b) {
  if (!b) return a;
  if (!a) return negate(b);
  return make(Op::subtract, Type::real, {a, b});
}

NodePtr multiply(NodePtr a, NodePtr b) {
  if (!a || !b) return nullptr;
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  return make(Op::multiply, Type::real, {a, b});
}

NodePtr divide(NodePtr a, NodePtr b) { return a ? make(Op::divide, Type::real, {a, b}) : nullptr; }

NodePtr compare(Op op, NodePtr a, NodePtr b) { return make(op, Type::boolean, {a, b}); }

NodePtr choose(NodePtr condition, NodePtr a, NodePtr b, int column) {
  if (!a && !b) return nullptr;
  auto n = make(Op::call, Type::real, {condition, a ? a : real_literal(0, column), b ? b : real_literal(0, column)});
  n->function = Function::select;
  n->name = "select";
  return n;
}

// Whether node is the variable being differentiated by.
using Leaf = std::function<bool(const Node&)>;

NodePtr d(const NodePtr& n, const Leaf& leaf) {
  if (n->type != Type::real) return nullptr;  // ints and bools are constant under a real perturbation
  if (leaf(*n)) return real_literal(1, n->column);
  const std::vector<NodePtr>& a = n->args;
  switch (n->op) {
    case Op::negate: return negate(d(a[0], leaf));
    case Op::add: return add(d(a[0], leaf), d(a[1], leaf));
    case Op::subtract: return subtract(d(a[0], leaf), d(a[1], leaf));
    case Op::multiply: return add(multiply(d(a[0], leaf), a[1]), multiply(a[0], d(a[1], leaf)));
    case Op::divide: {
      NodePtr da = d(a[0], leaf), db = d(a[1], leaf);
      return subtract(divide(da, a[1]), divide(multiply(a[0], db), multiply(a[1], a[1])));
    }
    case Op::call: break;
    default: return nullptr;  // literals, scalars, reads of another element, variables other than score
  }
  const int c = n->column;
  switch (n->function) {
    case Function::select: return choose(a[0], d(a[1], leaf), d(a[2], leaf), c);
    case Function::min: return choose(compare(Op::less_equal, a[0], a[1]), d(a[0], leaf), d(a[1], leaf), c);
    case Function::max: return choose(compare(Op::greater_equal, a[0], a[1]), d(a[0], leaf), d(a[1], leaf), c);
    case Function::clamp:
      return choose(compare(Op::less, a[0], a[1]), d(a[1], leaf),
                    choose(compare(Op::greater, a[0], a[2]), d(a[2], leaf), d(a[0], leaf), c), c);
    case Function::abs: {
      NodePtr dx = d(a[0], leaf);
      return choose(compare(Op::greater_equal, a[0], real_literal(0, c)), dx, negate(dx), c);
    }
    case Function::exp: return multiply(n, d(a[0], leaf));
    case Function::log: return divide(d(a[0], leaf), a[0]);
    case Function::tanh:
      return multiply(subtract(real_literal(1, c), multiply(n, n)), d(a[0], leaf));
    case Function::sqrt: return divide(d(a[0], leaf), multiply(real_literal(2, c), n));
    case Function::to_float: return d(a[0], leaf);
    case Function::floor:
    case Function::to_int: return nullptr;
  }
  return nullptr;
}

NodePtr or_zero(NodePtr n, const NodePtr& root) { return n ? n : real_literal(0, root->column); }

}  // namespace

NodePtr derivative_by_score(const NodePtr& root) {
  return or_zero(d(root, [](const Node& n) { return n.op == Op::variable && n.variable == Variable::score; }), root);
}

NodePtr derivative_by_read(const NodePtr& root, const Node* read) {
  return or_zero(d(root, [read](const Node& n) { return &n == read; }), root);
}

std::vector<const Node*> float_reads(const NodePtr& root) {
  std::vector<const Node*> out;
  std::function<void(const NodePtr&)> walk = [&](const NodePtr& n) {
    if (n->op == Op::read && n->type == Type::real) {
      for (const Node* seen : out)
        if (seen == n.get()) return;
      out.push_back(n.get());
      return;  // indices are integers: no float read below matters to a gradient
    }
    for (const NodePtr& a : n->args) walk(a);
  };
  walk(root);
  return out;
}

}  // namespace mfagen::expr
