#include "mfagen/msl/cast_context.h"

#include <fmt/format.h>

#include <set>
#include <string_view>

namespace mfagen::msl {
namespace {

// Keywords an expression may follow: `return (float4)x;` is a cast.
const std::set<std::string_view> kExpressionKeywords = {"return", "case", "co_return", "co_yield", "throw"};

const std::set<std::string_view> kUnaryOperators = {"-", "+", "!", "~", "*", "&"};

// Whether token k ends an operand, so that an operator after it is binary.
bool ends_operand(const TokenView& v, size_t k) {
  return v.is_number(k) || v.is_literal(k) || v.is(k, ")") || v.is(k, "]") ||
         (v.is_identifier(k) && !kExpressionKeywords.contains(v.text(k)));
}

}  // namespace

CastContext cast_context(const TokenView& v, size_t open, size_t operand) {
  if (open == 0) return CastContext::not_a_cast;
  std::string_view prev = v.text(open - 1);
  std::string_view after = v.text(operand);
  if (after == ";" || after == ")" || after == "," || after == "]" || after == "{" || after.empty())
    return CastContext::not_a_cast;
  if (v.is_identifier(open - 1) && !kExpressionKeywords.contains(prev)) return CastContext::not_a_cast;
  if (prev == ")" || prev == "]") return CastContext::not_a_cast;
  if (kUnaryOperators.contains(prev) && !(open >= 2 && ends_operand(v, open - 2)))
    return CastContext::cast_after_unary_operator;
  return CastContext::cast;
}

std::string unary_operator_before_cast_message(const TokenView& v, size_t open) {
  return fmt::format("write '{}T(...)' instead of a unary operator before a C-style vector cast", v.text(open - 1));
}

}  // namespace mfagen::msl
