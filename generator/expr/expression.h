// The expression language of score_mod and mask_mod (DESIGN.md section 13):
// the syntax tree every stage shares. The parser builds it, the type checker
// resolves its names and sets its types, the generator differentiates it and
// prints it as MSL. Nodes are immutable once checked, so derivatives share
// subtrees of the expression they came from.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mfagen::expr {

enum class Type : uint8_t { integer, real, boolean };  // int32, float32, bool in the kernel

enum class Op : uint8_t {
  int_literal,
  float_literal,
  bool_literal,
  name,      // an identifier as parsed; the type checker turns it into one of the next three
  variable,  // score, b, h, q_idx, kv_idx or a size (B, Hq, Hkv, Sq, Sk)
  scalar,    // a runtime float scalar of the spec
  read,      // an element of a captured tensor: args are the indices
  negate,
  logical_not,
  add,
  subtract,
  multiply,
  divide,        // always real division
  floor_divide,  // integers: floor(a / b), 0 when b is 0
  modulo,        // integers: a - b * floor(a / b), 0 when b is 0
  less,
  less_equal,
  greater,
  greater_equal,
  equal,
  not_equal,
  logical_and,
  logical_or,
  call,  // a built-in function: args are its arguments
};

enum class Variable : uint8_t { score, b, h, q_idx, kv_idx, B, Hq, Hkv, Sq, Sk };

enum class Function : uint8_t { select, min, max, clamp, abs, exp, log, tanh, sqrt, floor, to_int, to_float };

struct Node;
using NodePtr = std::shared_ptr<Node>;

struct Node {
  Op op = Op::int_literal;
  Type type = Type::integer;  // set by the type checker (literals by the parser)
  int column = 1;             // 1-based column of the node's first character in the expression
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string name;           // the identifier of a name, read or call as written
  Variable variable = Variable::score;
  Function function = Function::select;
  uint32_t index = 0;         // scalar or captured tensor: its position in the Environment
  std::vector<NodePtr> args;
};

// A problem in an expression: the 1-based column it starts at and what was
// expected. The spec stage adds the file and the JSON path.
class ExpressionError : public std::runtime_error {
 public:
  ExpressionError(int column, std::string message)
      : std::runtime_error("column " + std::to_string(column) + ": " + message), column_(column),
        message_(std::move(message)) {}
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  int column_;
  std::string message_;
};

// The spelling of a variable, a function and a type in the language.
const char* spelling(Variable);
const char* spelling(Function);
const char* spelling(Type);

}  // namespace mfagen::expr
