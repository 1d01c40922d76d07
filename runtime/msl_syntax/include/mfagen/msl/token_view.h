// A lowering's view of MSL: its tokens (tokenizer.h) indexed by significant
// token (k counts identifiers, numbers, literals and punctuation, skipping
// whitespace, comments and directives), with the queries and the
// single-token rewrites every lowering pass is made of, and the lowered text
// with the original offset of every byte (the checker reports clang's
// diagnostics at their place in the file as written).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mfagen/msl/tokenizer.h"

namespace mfagen::msl {

// Lowered text and, for each of its bytes, the offset in the original text
// it comes from; one more entry for the end (the original's size).
struct TextWithOrigin {
  std::string text;
  std::vector<uint32_t> origin;
};

class TokenView {
 public:
  explicit TokenView(std::string_view text);

  // --- significant tokens ---
  size_t count() const { return significant_.size(); }
  const Token& at(size_t k) const { return tokens_[significant_[k]]; }
  // "" past the end, so look-ahead (and look-behind from 0) needs no bounds checks.
  std::string_view text(size_t k) const { return k < count() ? std::string_view(at(k).text) : ""; }
  bool is(size_t k, std::string_view s) const { return k < count() && at(k).text == s; }
  bool is_kind(size_t k, TokenKind kind) const { return k < count() && at(k).kind == kind; }
  bool is_identifier(size_t k) const { return is_kind(k, TokenKind::identifier); }
  bool is_number(size_t k) const { return is_kind(k, TokenKind::number); }
  bool is_literal(size_t k) const { return is_kind(k, TokenKind::literal); }
  // Inside a `[[...]]` attribute list (brackets included).
  bool in_attribute(size_t k) const { return k < count() && in_attribute_[k]; }
  // Where token k comes from (clang's line markers; "<input>" without them).
  std::string_view file(size_t k) const { return files_[at(k).file]; }
  // Whether token k is in one of the stand-in's own headers (the cpu backend
  // lowers preprocessed text, which has them): the stand-in spells out what
  // the lowerings insert, so passes leave its code as it is.
  bool in_standin(size_t k) const { return file(k).find("/mfagen_standin/") != std::string_view::npos; }
  // Every file the line markers name, "<input>" first.
  const std::vector<std::string>& files() const { return files_; }
  int line(size_t k) const { return at(k).line; }
  size_t offset(size_t k) const { return at(k).offset; }
  // The original text from token begin to the end of token end - 1, with
  // whatever lies between them (whitespace, comments), before any rewrite.
  std::string_view original_text(size_t begin, size_t end) const;

  // Index of the token closing the bracket ( [ { < opened at k, or count()
  // when it is not closed. A `<` is matched as C++ reads a template
  // argument list (find_matching_angle, token_view.cpp); a `>>` closing
  // two lists is the match of both.
  size_t find_matching(size_t k) const;
  // The same, but an unclosed bracket is an error (fail).
  size_t matching(size_t k) const;
  // The `{` that opens the body of the declaration going on from token k
  // (the first `{` or `;` outside parentheses and brackets), or count() for
  // a declaration without one.
  size_t declaration_body(size_t k) const;

  // Throws SyntaxError "file:line: error: message" for token k.
  [[noreturn]] void fail(size_t k, const std::string& message) const;

  // --- rewrites ---
  void replace(size_t k, std::string s) { replace_token(significant_[k], std::move(s)); }
  // Whether a pass replaced token k (even by the same text).
  bool rewritten(size_t k) const { return rewritten_[significant_[k]]; }
  // Text to emit before token k; its bytes map to token k's original offset.
  void insert_before(size_t k, std::string s) { inserted_before_[significant_[k]] += s; }

  // --- every token, whitespace, comments and directives included (index i) ---
  const std::vector<Token>& tokens() const { return tokens_; }
  void replace_token(size_t i, std::string s);

  // --- the lowered text ---
  std::string joined() const;
  // Unchanged bytes map to themselves, the bytes of a rewritten or inserted
  // text to the token's original offset. A rewrite never moves a line: when
  // a rewritten token's original text had more newlines than its
  // replacement, the missing ones are kept after it.
  TextWithOrigin joined_with_origin() const;

 private:
  size_t find_matching_angle(size_t k) const;
  std::string original_;
  std::vector<Token> tokens_;
  std::vector<std::string> files_;
  std::vector<size_t> significant_;  // index into tokens_ of each significant token
  std::vector<bool> in_attribute_;
  std::vector<bool> rewritten_;  // per token of tokens_
  std::map<size_t, std::string> inserted_before_;  // token of tokens_ -> text
};

}  // namespace mfagen::msl
