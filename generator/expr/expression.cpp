#include "expr/environment.h"
#include "expr/expression.h"

#include <array>
#include <string_view>

namespace mfagen::expr {

const char* spelling(Variable v) {
  constexpr std::array<const char*, 10> kNames{"score", "b", "h", "q_idx", "kv_idx", "B", "Hq", "Hkv", "Sq", "Sk"};
  return kNames[size_t(v)];
}

const char* spelling(Function f) {
  constexpr std::array<const char*, 12> kNames{"select", "min",  "max",  "clamp", "abs", "exp",
                                               "log",    "tanh", "sqrt", "floor", "int", "float"};
  return kNames[size_t(f)];
}

const char* spelling(Type t) {
  switch (t) {
    case Type::integer: return "an int";
    case Type::real: return "a float";
    case Type::boolean: return "a bool";
  }
  return "?";
}

const char* spelling(CaptureType t) { return t == CaptureType::float32 ? "float32" : "int32"; }

bool reserved_name(const std::string& name) {
  for (size_t v = 0; v <= size_t(Variable::Sk); ++v)
    if (name == spelling(Variable(v))) return true;
  for (size_t f = 0; f <= size_t(Function::to_float); ++f)
    if (name == spelling(Function(f))) return true;
  return name == "true" || name == "false";
}

}  // namespace mfagen::expr
