#include "expr/msl_emitter.h"

#include <fmt/format.h>

#include <array>

namespace mfagen::expr {

namespace {

// C's precedence, low to high, for the operators the language has.
enum Level : int { kOr = 1, kAnd, kEquality, kRelational, kSum, kProduct, kUnary, kPrimary };

int level(const Node& n) {
  switch (n.op) {
    case Op::logical_or: return kOr;
    case Op::logical_and: return kAnd;
    case Op::equal:
    case Op::not_equal: return kEquality;
    case Op::less:
    case Op::less_equal:
    case Op::greater:
    case Op::greater_equal: return kRelational;
    case Op::add:
    case Op::subtract: return kSum;
    case Op::multiply:
    case Op::divide: return kProduct;
    case Op::negate:
    case Op::logical_not: return kUnary;
    default: return kPrimary;
  }
}

const char* symbol(Op op) {
  switch (op) {
    case Op::logical_or: return "||";
    case Op::logical_and: return "&&";
    case Op::equal: return "==";
    case Op::not_equal: return "!=";
    case Op::less: return "<";
    case Op::less_equal: return "<=";
    case Op::greater: return ">";
    case Op::greater_equal: return ">=";
    case Op::add: return "+";
    case Op::subtract: return "-";
    case Op::multiply: return "*";
    case Op::divide: return "/";
    default: return "?";
  }
}

class Emitter {
 public:
  explicit Emitter(const Environment& env) : env_(env) {}

  std::string emit(const Node& n) {
    switch (n.op) {
      case Op::int_literal: return std::to_string(n.int_value);
      case Op::float_literal: return msl_float(n.float_value);
      case Op::bool_literal: return n.bool_value ? "true" : "false";
      case Op::variable: {
        const Variable v = n.variable;
        const bool size = v == Variable::B || v == Variable::Hq || v == Variable::Hkv || v == Variable::Sq ||
                          v == Variable::Sk;
        return size ? fmt::format("m.{}", spelling(v)) : std::string(spelling(v));
      }
      case Op::scalar: return "m." + env_.scalars[n.index];
      case Op::read: return read(n);
      case Op::negate: return fmt::format("-{}", operand(*n.args[0], kUnary, false));
      case Op::logical_not: return fmt::format("!{}", operand(*n.args[0], kUnary, false));
      case Op::floor_divide: return fmt::format("mod_floor_div({}, {})", emit(*n.args[0]), emit(*n.args[1]));
      case Op::modulo: return fmt::format("mod_floor_mod({}, {})", emit(*n.args[0]), emit(*n.args[1]));
      case Op::call: return call(n);
      case Op::name: return n.name;  // never reached for a checked tree
      default: break;
    }
    const int l = level(n);
    return fmt::format("{} {} {}", operand(*n.args[0], l, false), symbol(n.op), operand(*n.args[1], l, true));
  }

 private:
  // Parenthesized when the child binds more loosely, or equally on the right
  // (a - (b - c)), and around comparisons and && inside another logical or
  // comparison operator, where C is legal but easy to misread.
  std::string operand(const Node& child, int parent, bool right) {
    const int l = level(child);
    bool paren = l < parent || (right && l == parent && parent != kPrimary);
    if (l == kAnd && parent == kOr) paren = true;
    if ((l == kEquality || l == kRelational) && (parent == kEquality || parent == kRelational)) paren = true;
    if (child.op == Op::negate && parent == kUnary) paren = true;  // "-(-x)", never "--x"
    const std::string text = emit(child);
    return paren ? "(" + text + ")" : text;
  }

  std::string read(const Node& n) { return fmt::format("m.{}[{}]", env_.captures[n.index].name, flat_index(n)); }

 public:
  // The row-major flat index of a read: i0 * E1 + i1, (i0 * E1 + i1) * E2 + i2, ...
  std::string flat_index(const Node& n) {
    const CaptureDecl& c = env_.captures[n.index];
    std::string flat = emit(*n.args[0]);
    for (size_t d = 1; d < n.args.size(); ++d) {
      const std::string extent = msl_extent(c.extents[d]);
      const bool simple = c.extents[d].is_constant() || extent.find(' ') == std::string::npos;
      const std::string left = d == 1 && level(*n.args[0]) >= kProduct ? flat : "(" + flat + ")";
      flat = fmt::format("{} * {} + {}", d == 1 ? left : "(" + flat + ")", simple ? extent : "(" + extent + ")",
                         operand(*n.args[d], kSum, true));
    }
    return flat;
  }

 private:
  std::string call(const Node& n) {
    std::vector<std::string> args;
    for (const NodePtr& a : n.args) args.push_back(emit(*a));
    switch (n.function) {
      case Function::select:
        return fmt::format("({} ? {} : {})", operand(*n.args[0], kOr, false), args[1], args[2]);
      case Function::to_float: return fmt::format("float({})", args[0]);
      case Function::to_int: return fmt::format("mod_to_int({})", args[0]);
      default: break;
    }
    return fmt::format("{}({})", spelling(n.function), fmt::join(args, ", "));
  }

  const Environment& env_;
};

}  // namespace

std::string to_msl(const Node& n, const Environment& env) { return Emitter(env).emit(n); }

std::string msl_flat_index(const Node& read, const Environment& env) { return Emitter(env).flat_index(read); }

std::string msl_float(double v) {
  std::string text = fmt::format("{}", float(v));
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

std::string msl_extent(const LinearForm& f) {
  static constexpr std::array<const char*, LinearForm::kSizes> kNames{"m.B", "m.Hq", "m.Hkv", "m.Sq", "m.Sk"};
  std::string out;
  for (int i = 0; i < LinearForm::kSizes; ++i) {
    const int64_t c = f.size[i];
    if (c == 0) continue;
    const int64_t mag = c < 0 ? -c : c;
    out += c < 0 ? (out.empty() ? "-" : " - ") : (out.empty() ? "" : " + ");
    out += mag == 1 ? std::string(kNames[i]) : fmt::format("{} * {}", mag, kNames[i]);
  }
  if (out.empty()) return std::to_string(f.constant);
  if (f.constant > 0) out += fmt::format(" + {}", f.constant);
  if (f.constant < 0) out += fmt::format(" - {}", -f.constant);
  return out;
}

}  // namespace mfagen::expr
