#include "mfagen/msl/integer_expression.h"

#include <string>

namespace mfagen::msl {
namespace {

// Recursive descent over tokens [k, end): sum := product (('+' | '-') product)*,
// product := factor ('*' factor)*, factor := '(' sum ')' | '-' factor | literal.
class IntegerExpression {
 public:
  IntegerExpression(const TokenView& v, size_t begin, size_t end) : v_(v), k_(begin), end_(end) {}

  std::optional<long> value() {
    std::optional<long> value = sum();
    return k_ == end_ ? value : std::nullopt;
  }

 private:
  bool at(std::string_view s) const { return k_ < end_ && v_.is(k_, s); }

  std::optional<long> sum() {
    std::optional<long> value = product();
    while (value && (at("+") || at("-"))) {
      bool plus = at("+");
      ++k_;
      std::optional<long> rhs = product();
      value = rhs ? (plus ? add(*value, *rhs) : subtract(*value, *rhs)) : std::nullopt;
    }
    return value;
  }

  std::optional<long> product() {
    std::optional<long> value = factor();
    while (value && at("*")) {
      ++k_;
      std::optional<long> rhs = factor();
      value = rhs ? multiply(*value, *rhs) : std::nullopt;
    }
    return value;
  }

  std::optional<long> factor() {
    if (at("(")) {
      ++k_;
      std::optional<long> inner = sum();
      if (!inner || !at(")")) return std::nullopt;
      ++k_;
      return inner;
    }
    if (at("-")) {
      ++k_;
      std::optional<long> operand = factor();
      return operand ? subtract(0, *operand) : std::nullopt;
    }
    if (k_ >= end_ || !v_.is_number(k_)) return std::nullopt;
    return literal(std::string(v_.text(k_++)));
  }

  // An overflowing expression has no value (rather than an undefined one).
  static std::optional<long> add(long a, long b) {
    long r = 0;
    return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional(r);
  }
  static std::optional<long> subtract(long a, long b) {
    long r = 0;
    return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional(r);
  }
  static std::optional<long> multiply(long a, long b) {
    long r = 0;
    return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional(r);
  }

  // 12, 0x1f, 010, with u/U/l/L suffixes.
  static std::optional<long> literal(std::string text) {
    while (!text.empty() && (text.back() == 'u' || text.back() == 'U' || text.back() == 'l' || text.back() == 'L'))
      text.pop_back();
    try {
      size_t used = 0;
      long value = std::stol(text, &used, 0);
      return used == text.size() ? std::optional(value) : std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  const TokenView& v_;
  size_t k_;
  size_t end_;
};

}  // namespace

std::optional<long> integer_expression(const TokenView& v, size_t begin, size_t end) {
  return IntegerExpression(v, begin, end).value();
}

}  // namespace mfagen::msl
