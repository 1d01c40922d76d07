// The lowering's view of preprocessed MSL: its tokens (msl_tokens.h), indexed
// by significant token (k counts identifiers, numbers, literals and
// punctuation, skipping whitespace and directives), with the queries and the
// single-token rewrites every lowering pass is made of.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "msl_tokens.h"

namespace mfagen::cpu {

class TokenView {
 public:
  explicit TokenView(std::string_view preprocessed);

  size_t count() const { return significant_.size(); }
  Token& at(size_t k) { return tokens_[significant_[k]]; }
  const Token& at(size_t k) const { return tokens_[significant_[k]]; }
  // "" past the end, so look-ahead needs no bounds checks.
  std::string_view text(size_t k) const { return k < count() ? std::string_view(at(k).text) : ""; }
  bool is(size_t k, std::string_view s) const { return k < count() && at(k).text == s; }
  bool is_identifier(size_t k) const { return k < count() && at(k).kind == TokenKind::identifier; }
  bool is_number(size_t k) const { return k < count() && at(k).kind == TokenKind::number; }
  // Inside a `[[...]]` attribute list.
  bool in_attribute(size_t k) const { return k < count() && in_attribute_[k]; }
  // From the stand-in's own headers, which spell out what the passes insert.
  bool in_standin(size_t k) const;
  void replace(size_t k, std::string s) { at(k).text = std::move(s); }

  // Throws CompileError "file:line: error: message" for token k.
  [[noreturn]] void fail(size_t k, const std::string& message) const;

  // Index of the token closing the bracket ( [ { < opened at k.
  size_t matching(size_t k) const;

  // Value of the integer literals, + - * and parentheses in tokens [begin, end).
  std::optional<long> integer_expression(size_t begin, size_t end) const;

  // Whether `( TYPE )` at k (operand starting at `next`) is a cast expression
  // rather than sizeof(TYPE), a parameter list or a call.
  bool is_cast_context(size_t k, size_t next) const;

  std::string joined() const { return join_tokens(tokens_); }

 private:
  std::vector<Token> tokens_;
  std::vector<size_t> significant_;
  std::vector<bool> in_attribute_;
};

}  // namespace mfagen::cpu
