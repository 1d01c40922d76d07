#include "msl_token_view.h"

#include <fmt/format.h>

#include <functional>
#include <set>

#include "mfagen/cpu/backend.h"

namespace mfagen::cpu {
namespace {

const std::set<std::string_view> kExpressionKeywords = {"return", "case", "co_return", "co_yield", "throw"};

}  // namespace

TokenView::TokenView(std::string_view preprocessed) : tokens_(tokenize(preprocessed)) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i].significant()) significant_.push_back(i);
  in_attribute_.assign(significant_.size(), false);
  for (size_t k = 0; k + 1 < count(); ++k) {
    if (!is(k, "[") || !is(k + 1, "[")) continue;
    size_t end = matching(k);
    for (size_t j = k; j <= end; ++j) in_attribute_[j] = true;
    k = end;
  }
}

bool TokenView::in_standin(size_t k) const { return at(k).file.find("/mfagen_standin/") != std::string::npos; }

void TokenView::fail(size_t k, const std::string& message) const {
  const Token& t = at(std::min(k, count() - 1));
  throw CompileError(fmt::format("{}:{}: error: {}", t.file, t.line, message));
}

size_t TokenView::matching(size_t k) const {
  std::string_view open = text(k);
  std::string_view close = open == "(" ? ")" : open == "[" ? "]" : open == "{" ? "}" : ">";
  int depth = 0;
  for (size_t j = k; j < count(); ++j) {
    if (text(j) == open) ++depth;
    if (text(j) == close && --depth == 0) return j;
  }
  fail(k, fmt::format("unbalanced '{}'", open));
}

std::optional<long> TokenView::integer_expression(size_t begin, size_t end) const {
  size_t k = begin;
  std::function<std::optional<long>()> sum, factor;
  factor = [&]() -> std::optional<long> {
    if (k < end && is(k, "(")) {
      ++k;
      std::optional<long> inner = sum();
      if (!inner || k >= end || !is(k, ")")) return std::nullopt;
      ++k;
      return inner;
    }
    if (k < end && is(k, "-")) {
      ++k;
      std::optional<long> operand = factor();
      return operand ? std::optional(-*operand) : std::nullopt;
    }
    if (k >= end || !is_number(k)) return std::nullopt;
    std::string literal(text(k++));
    while (!literal.empty() && (literal.back() == 'u' || literal.back() == 'U' || literal.back() == 'l' ||
                                literal.back() == 'L'))
      literal.pop_back();
    try {
      size_t used = 0;
      long value = std::stol(literal, &used, 0);
      return used == literal.size() ? std::optional(value) : std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  auto product = [&]() -> std::optional<long> {
    std::optional<long> value = factor();
    while (value && k < end && is(k, "*")) {
      ++k;
      std::optional<long> rhs = factor();
      value = rhs ? std::optional(*value * *rhs) : std::nullopt;
    }
    return value;
  };
  sum = [&]() -> std::optional<long> {
    std::optional<long> value = product();
    while (value && k < end && (is(k, "+") || is(k, "-"))) {
      bool plus = is(k++, "+");
      std::optional<long> rhs = product();
      value = rhs ? std::optional(plus ? *value + *rhs : *value - *rhs) : std::nullopt;
    }
    return value;
  };
  std::optional<long> value = sum();
  return k == end ? value : std::nullopt;
}

bool TokenView::is_cast_context(size_t k, size_t next) const {
  if (k == 0) return false;
  std::string_view prev = text(k - 1);
  std::string_view after = text(next);
  if (after == ";" || after == ")" || after == "," || after == "]" || after == "{" || after.empty()) return false;
  if (is_identifier(k - 1) && !kExpressionKeywords.contains(prev)) return false;
  if (prev == ")" || prev == "]") return false;
  static const std::set<std::string_view> unary = {"-", "+", "!", "~", "*", "&"};
  if (unary.contains(prev)) {
    bool operand_before = k >= 2 && (at(k - 2).kind == TokenKind::number || at(k - 2).kind == TokenKind::literal ||
                                     is(k - 2, ")") || is(k - 2, "]") ||
                                     (is_identifier(k - 2) && !kExpressionKeywords.contains(text(k - 2))));
    if (!operand_before)
      fail(k, fmt::format("write '{}T(...)' instead of a unary operator before a C-style vector cast", prev));
  }
  return true;
}

}  // namespace mfagen::cpu
