#include "expr/type_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace mfagen::expr {

namespace {

struct FunctionInfo {
  std::string_view spelling;
  Function function;
  size_t arity;
};

constexpr std::array<FunctionInfo, 12> kFunctions{{{"select", Function::select, 3},
                                                   {"min", Function::min, 2},
                                                   {"max", Function::max, 2},
                                                   {"clamp", Function::clamp, 3},
                                                   {"abs", Function::abs, 1},
                                                   {"exp", Function::exp, 1},
                                                   {"log", Function::log, 1},
                                                   {"tanh", Function::tanh, 1},
                                                   {"sqrt", Function::sqrt, 1},
                                                   {"floor", Function::floor, 1},
                                                   {"int", Function::to_int, 1},
                                                   {"float", Function::to_float, 1}}};

constexpr std::array<std::pair<std::string_view, Variable>, 10> kVariables{{{"score", Variable::score},
                                                                           {"b", Variable::b},
                                                                           {"h", Variable::h},
                                                                           {"q_idx", Variable::q_idx},
                                                                           {"kv_idx", Variable::kv_idx},
                                                                           {"B", Variable::B},
                                                                           {"Hq", Variable::Hq},
                                                                           {"Hkv", Variable::Hkv},
                                                                           {"Sq", Variable::Sq},
                                                                           {"Sk", Variable::Sk}}};

bool numeric(Type t) { return t != Type::boolean; }

NodePtr promoted(NodePtr n) {
  if (n->type != Type::integer) return n;
  auto c = std::make_shared<Node>();
  c->op = Op::call;
  c->function = Function::to_float;
  c->type = Type::real;
  c->column = n->column;
  c->args = {std::move(n)};
  return c;
}

// Size variables B .. Sk as LinearForm size slots 0 .. 4.
int size_slot(Variable v) { return int(v) - int(Variable::B); }

std::optional<LinearForm> smaller(const std::optional<LinearForm>& a, const std::optional<LinearForm>& b) {
  if (!a || !b) return std::nullopt;
  if (provably_at_most(*a, *b)) return a;
  if (provably_at_most(*b, *a)) return b;
  return std::nullopt;
}

std::optional<LinearForm> larger(const std::optional<LinearForm>& a, const std::optional<LinearForm>& b) {
  if (!a || !b) return std::nullopt;
  if (provably_at_most(*a, *b)) return b;
  if (provably_at_most(*b, *a)) return a;
  return std::nullopt;
}

// Either bound is sound for the low side of a max or the high side of a
// min when neither is provably tighter; a constant one reads best in
// messages, and otherwise the second operand's: in min(x, limit) and
// clamp(x, lo, hi) that is the limit the user wrote.
std::optional<LinearForm> either(const std::optional<LinearForm>& a, const std::optional<LinearForm>& b) {
  if (a && a->is_constant()) return a;
  if (b && b->is_constant()) return b;
  return b ? b : a;
}

Interval minimum(const Interval& a, const Interval& b) {
  Interval r;
  r.low = smaller(a.low, b.low);
  // The high side of a min: any operand's bound holds; the smaller is tighter.
  if (!a.high) r.high = b.high;
  else if (!b.high) r.high = a.high;
  else if (auto s = smaller(a.high, b.high)) r.high = s;
  else r.high = either(a.high, b.high);
  return r;
}

Interval maximum(const Interval& a, const Interval& b) {
  Interval r;
  r.high = larger(a.high, b.high);
  if (!a.low) r.low = b.low;
  else if (!b.low) r.low = a.low;
  else if (auto l = larger(a.low, b.low)) r.low = l;
  else r.low = either(a.low, b.low);
  return r;
}

Interval negated(const Interval& a) {
  Interval r;
  if (a.high) r.low = *a.high * -1;
  if (a.low) r.high = *a.low * -1;
  return r;
}

std::optional<int64_t> constant_of(const Interval& a) {
  if (a.low && a.high && *a.low == *a.high && a.low->is_constant()) return a.low->constant;
  return std::nullopt;
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

class Checker {
 public:
  explicit Checker(const Environment& env) : env_(env) {}

  NodePtr check(NodePtr n) {
    switch (n->op) {
      case Op::int_literal:
      case Op::float_literal:
      case Op::bool_literal:
        return n;
      case Op::name:
        return resolve_name(std::move(n));
      case Op::variable:
      case Op::scalar:
        return n;
      case Op::read:
        return check_read(std::move(n));
      case Op::call:
        return check_call(std::move(n));
      case Op::negate:
        n->args[0] = check(n->args[0]);
        require_number(*n->args[0], "'-'");
        n->type = n->args[0]->type;
        return n;
      case Op::logical_not:
        n->args[0] = check(n->args[0]);
        require_bool(*n->args[0], "'!'");
        n->type = Type::boolean;
        return n;
      case Op::add:
      case Op::subtract:
      case Op::multiply:
        check_args(*n);
        require_number(*n->args[0], op_text(n->op));
        require_number(*n->args[1], op_text(n->op));
        return arithmetic(std::move(n));
      case Op::divide:
        check_args(*n);
        require_number(*n->args[0], "'/'");
        require_number(*n->args[1], "'/'");
        n->args[0] = promoted(n->args[0]);
        n->args[1] = promoted(n->args[1]);
        n->type = Type::real;
        return n;
      case Op::floor_divide:
      case Op::modulo:
        check_args(*n);
        for (const NodePtr& a : n->args)
          if (a->type != Type::integer)
            throw ExpressionError(a->column, fmt::format("{} takes integers, found {}", op_text(n->op),
                                                         spelling(a->type)));
        n->type = Type::integer;
        return n;
      case Op::less:
      case Op::less_equal:
      case Op::greater:
      case Op::greater_equal:
      case Op::equal:
      case Op::not_equal: {
        check_args(*n);
        const bool equality = n->op == Op::equal || n->op == Op::not_equal;
        const Type a = n->args[0]->type, b = n->args[1]->type;
        if (equality && a == Type::boolean && b == Type::boolean) {
          n->type = Type::boolean;
          return n;
        }
        require_number(*n->args[0], op_text(n->op));
        require_number(*n->args[1], op_text(n->op));
        unify(*n);
        n->type = Type::boolean;
        return n;
      }
      case Op::logical_and:
      case Op::logical_or:
        check_args(*n);
        require_bool(*n->args[0], op_text(n->op));
        require_bool(*n->args[1], op_text(n->op));
        n->type = Type::boolean;
        return n;
    }
    return n;
  }

 private:
  static const char* op_text(Op op) {
    switch (op) {
      case Op::add: return "'+'";
      case Op::subtract: return "'-'";
      case Op::multiply: return "'*'";
      case Op::floor_divide: return "'//'";
      case Op::modulo: return "'%'";
      case Op::less: return "'<'";
      case Op::less_equal: return "'<='";
      case Op::greater: return "'>'";
      case Op::greater_equal: return "'>='";
      case Op::equal: return "'=='";
      case Op::not_equal: return "'!='";
      case Op::logical_and: return "'&&'";
      case Op::logical_or: return "'||'";
      default: return "this operator";
    }
  }

  void check_args(Node& n) {
    for (NodePtr& a : n.args) a = check(a);
  }

  static void require_number(const Node& n, std::string_view what) {
    if (!numeric(n.type))
      throw ExpressionError(n.column, fmt::format("{} takes numbers, found a bool", what));
  }
  static void require_bool(const Node& n, std::string_view what) {
    if (n.type != Type::boolean)
      throw ExpressionError(n.column, fmt::format("{} takes bools (comparisons), found {}", what, spelling(n.type)));
  }

  // Mixed int and float operands: the int one becomes float.
  static void unify(Node& n) {
    const bool any_real = std::any_of(n.args.begin(), n.args.end(), [](const NodePtr& a) {
      return a->type == Type::real;
    });
    if (any_real)
      for (NodePtr& a : n.args) a = promoted(a);
  }

  static NodePtr arithmetic(NodePtr n) {
    unify(*n);
    n->type = n->args[0]->type;
    return n;
  }

  NodePtr resolve_name(NodePtr n) {
    for (auto [text, v] : kVariables) {
      if (n->name != text) continue;
      if (v == Variable::score && !env_.score_allowed)
        throw ExpressionError(n->column, "mask_mod cannot read score (it decides visibility before scores exist); "
                                         "use score_mod");
      n->op = Op::variable;
      n->variable = v;
      n->type = v == Variable::score ? Type::real : Type::integer;
      return n;
    }
    for (size_t i = 0; i < env_.scalars.size(); ++i) {
      if (env_.scalars[i] != n->name) continue;
      n->op = Op::scalar;
      n->index = uint32_t(i);
      n->type = Type::real;
      return n;
    }
    for (const CaptureDecl& c : env_.captures)
      if (c.name == n->name)
        throw ExpressionError(n->column, fmt::format("{0} is a captured tensor of {1} dimension(s); read an element "
                                                     "with {0}[...]",
                                                     n->name, c.extents.size()));
    for (const FunctionInfo& f : kFunctions)
      if (f.spelling == n->name)
        throw ExpressionError(n->column, fmt::format("{} is a function; call it with {}(...)", n->name, n->name));
    throw ExpressionError(n->column, fmt::format("unknown name '{}'; expected score, b, h, q_idx, kv_idx, B, Hq, Hkv, "
                                                 "Sq, Sk{}, a scalar or a captured tensor of the spec",
                                                 n->name, n->name == "and" || n->name == "or" || n->name == "not"
                                                              ? " (write && || ! for and, or, not)"
                                                              : ""));
  }

  NodePtr check_read(NodePtr n) {
    const CaptureDecl* decl = nullptr;
    for (size_t i = 0; i < env_.captures.size(); ++i)
      if (env_.captures[i].name == n->name) {
        decl = &env_.captures[i];
        n->index = uint32_t(i);
      }
    if (!decl)
      throw ExpressionError(n->column, fmt::format("'{}' is not a captured tensor of the spec (\"captures\")", n->name));
    if (n->args.size() != decl->extents.size())
      throw ExpressionError(n->column, fmt::format("{} has {} dimension(s), read with {} index(es)", n->name,
                                                   decl->extents.size(), n->args.size()));
    check_args(*n);
    for (size_t d = 0; d < n->args.size(); ++d) {
      const Node& index = *n->args[d];
      if (index.type != Type::integer)
        throw ExpressionError(index.column, fmt::format("indices are integers; index {} of {} is {} (convert with "
                                                        "int(...))",
                                                        d, n->name, spelling(index.type)));
      check_in_range(index, *decl, d);
    }
    n->type = decl->type == CaptureType::float32 ? Type::real : Type::integer;
    return n;
  }

  static void check_in_range(const Node& index, const CaptureDecl& decl, size_t d) {
    const Interval r = integer_bounds(index);
    const LinearForm last = decl.extents[d] - LinearForm::of(1);
    const auto shown = [](const std::optional<LinearForm>& f, const char* unbounded) {
      return f ? f->text() : std::string(unbounded);
    };
    const bool low_ok = r.low && provably_at_most(LinearForm::of(0), *r.low);
    const bool high_ok = r.high && provably_at_most(*r.high, last);
    if (low_ok && high_ok) return;
    throw ExpressionError(
        index.column,
        fmt::format("index {} of {} may be out of range: it spans [{}, {}] but must stay in [0, {}] for every call "
                    "({} has extent {}); clamp it, e.g. clamp(..., 0, {})",
                    d, decl.name, shown(r.low, "unbounded"), shown(r.high, "unbounded"), last.text(), decl.name,
                    decl.extent_text[d], last.text()));
  }

  NodePtr check_call(NodePtr n) {
    const FunctionInfo* f = nullptr;
    for (const FunctionInfo& info : kFunctions)
      if (info.spelling == n->name) f = &info;
    if (!f) {
      for (const CaptureDecl& c : env_.captures)
        if (c.name == n->name)
          throw ExpressionError(n->column, fmt::format("{0} is a captured tensor; index it with {0}[...]", n->name));
      throw ExpressionError(n->column, fmt::format("unknown function '{}'; expected select, min, max, clamp, abs, "
                                                   "exp, log, tanh, sqrt, floor, int or float",
                                                   n->name));
    }
    n->function = f->function;
    if (n->args.size() != f->arity)
      throw ExpressionError(n->column, fmt::format("{}() takes {} argument(s), found {}", f->spelling, f->arity,
                                                   n->args.size()));
    check_args(*n);
    const std::string what = fmt::format("{}()", f->spelling);
    switch (f->function) {
      case Function::select: {
        require_bool(*n->args[0], what);
        const Type a = n->args[1]->type, b = n->args[2]->type;
        if ((a == Type::boolean) != (b == Type::boolean))
          throw ExpressionError(n->args[2]->column, "select() needs both choices to be numbers or both bools");
        if (a == Type::boolean) {
          n->type = Type::boolean;
          return n;
        }
        if (a != b) {
          n->args[1] = promoted(n->args[1]);
          n->args[2] = promoted(n->args[2]);
        }
        n->type = n->args[1]->type;
        return n;
      }
      case Function::min:
      case Function::max:
      case Function::clamp:
      case Function::abs:
        for (const NodePtr& a : n->args) require_number(*a, what);
        unify(*n);
        n->type = n->args[0]->type;
        return n;
      case Function::to_float:
        // float(x): the promotion of an int, and nothing for a float.
        require_number(*n->args[0], what);
        return promoted(n->args[0]);
      case Function::exp:
      case Function::log:
      case Function::tanh:
      case Function::sqrt:
      case Function::floor:
        require_number(*n->args[0], what);
        n->args[0] = promoted(n->args[0]);
        n->type = Type::real;
        return n;
      case Function::to_int:
        require_number(*n->args[0], what);
        n->type = Type::integer;
        return n;
    }
    return n;
  }

  const Environment& env_;
};

}  // namespace

Interval integer_bounds_of(const Node& n);

// Bounds whose arithmetic would overflow int64 are unknown.
Interval integer_bounds(const Node& n) {
  try {
    return integer_bounds_of(n);
  } catch (const std::overflow_error&) {
    return Interval::unknown();
  }
}

Interval integer_bounds_of(const Node& n) {
  if (n.type != Type::integer) return Interval::unknown();
  switch (n.op) {
    case Op::int_literal:
      return Interval::exactly(LinearForm::of(n.int_value));
    case Op::variable:
      switch (n.variable) {
        case Variable::b: return {LinearForm::of(0), LinearForm::of_size(0, -1)};
        case Variable::h: return {LinearForm::of(0), LinearForm::of_size(1, -1)};
        case Variable::q_idx: return {LinearForm::of(0), LinearForm::of_size(3, -1)};
        case Variable::kv_idx: return {LinearForm::of(0), LinearForm::of_size(4, -1)};
        case Variable::score: return Interval::unknown();
        default: return Interval::exactly(LinearForm::of_size(size_slot(n.variable)));
      }
    case Op::negate:
      return negated(integer_bounds(*n.args[0]));
    case Op::add:
    case Op::subtract: {
      const Interval a = integer_bounds(*n.args[0]);
      const Interval b = n.op == Op::add ? integer_bounds(*n.args[1]) : negated(integer_bounds(*n.args[1]));
      Interval r;
      if (a.low && b.low) r.low = *a.low + *b.low;
      if (a.high && b.high) r.high = *a.high + *b.high;
      return r;
    }
    case Op::multiply: {
      const Interval a = integer_bounds(*n.args[0]), b = integer_bounds(*n.args[1]);
      const auto scaled = [](const Interval& x, int64_t k) {
        Interval r;
        if (x.low) r.low = *x.low * k;
        if (x.high) r.high = *x.high * k;
        return k < 0 ? Interval{r.high, r.low} : r;
      };
      if (auto k = constant_of(b)) return scaled(a, *k);
      if (auto k = constant_of(a)) return scaled(b, *k);
      return Interval::unknown();
    }
    case Op::floor_divide: {
      const Interval a = integer_bounds(*n.args[0]);
      const auto k = constant_of(integer_bounds(*n.args[1]));
      if (!k || *k <= 0) return Interval::unknown();
      Interval r;
      if (a.low && a.low->is_constant()) r.low = LinearForm::of(floor_div(a.low->constant, *k));
      if (a.high && a.high->is_constant()) r.high = LinearForm::of(floor_div(a.high->constant, *k));
      // x // k <= x for x >= 0 and k >= 1.
      if (!r.high && a.high && a.low && provably_at_most(LinearForm::of(0), *a.low)) r.high = a.high;
      if (!r.low && a.low && provably_at_most(LinearForm::of(0), *a.low)) r.low = LinearForm::of(0);
      return r;
    }
    case Op::modulo: {
      const auto k = constant_of(integer_bounds(*n.args[1]));
      if (!k || *k == 0) return Interval::unknown();
      return *k > 0 ? Interval{LinearForm::of(0), LinearForm::of(*k - 1)}
                    : Interval{LinearForm::of(*k + 1), LinearForm::of(0)};
    }
    case Op::call:
      switch (n.function) {
        case Function::select: {
          const Interval a = integer_bounds(*n.args[1]), b = integer_bounds(*n.args[2]);
          return {smaller(a.low, b.low), larger(a.high, b.high)};
        }
        case Function::min:
          return minimum(integer_bounds(*n.args[0]), integer_bounds(*n.args[1]));
        case Function::max:
          return maximum(integer_bounds(*n.args[0]), integer_bounds(*n.args[1]));
        case Function::clamp:
          return minimum(maximum(integer_bounds(*n.args[0]), integer_bounds(*n.args[1])),
                         integer_bounds(*n.args[2]));
        case Function::abs: {
          const Interval a = integer_bounds(*n.args[0]);
          if (a.low && provably_at_most(LinearForm::of(0), *a.low)) return a;
          if (a.high && provably_at_most(*a.high, LinearForm::of(0))) return negated(a);
          const Interval m = negated(a);
          return {LinearForm::of(0), larger(a.high, m.high)};
        }
        default:
          return Interval::unknown();
      }
    default:
      return Interval::unknown();  // int() of a float, an int tensor's element, ...
  }
}

NodePtr type_check(NodePtr root, const Environment& env, Type want) {
  Checker checker(env);
  root = checker.check(std::move(root));
  if (want == Type::boolean && root->type != Type::boolean)
    throw ExpressionError(root->column, fmt::format("mask_mod must be a bool (a comparison), found {}",
                                                    spelling(root->type)));
  if (want == Type::real) {
    if (root->type == Type::boolean)
      throw ExpressionError(root->column, "score_mod must be a number (the new score), found a bool; "
                                          "visibility belongs in mask_mod");
    root = promoted(root);
  }
  return root;
}

}  // namespace mfagen::expr
