// A lossless tokenizer for preprocessed MSL: concatenating every token's text
// gives the input back, so the lowering can rewrite single tokens and keep
// everything else (and clang's line markers) byte for byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mfagen::cpu {

enum class TokenKind { identifier, number, literal, punct, space, directive };

struct Token {
  TokenKind kind;
  std::string text;
  std::string file;  // source position from the preprocessor's line markers
  int line = 0;
  bool significant() const { return kind != TokenKind::space && kind != TokenKind::directive; }
  bool is(std::string_view s) const { return significant() && text == s; }
};

// Splits preprocessed text (clang -E output) into tokens. Whitespace, newlines
// and directive lines (`# 12 "file.metal"`, `#pragma ...`) are tokens too.
std::vector<Token> tokenize(std::string_view text);

std::string join_tokens(const std::vector<Token>& tokens);

}  // namespace mfagen::cpu
