// A lossless tokenizer for MSL, raw (the checker reads files as written) or
// preprocessed (the cpu backend reads clang -E output): concatenating every
// token's text gives the input back, so a lowering can rewrite single tokens
// and keep everything else, comments, directives and clang's line markers
// included, byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::msl {

enum class TokenKind {
  identifier,
  number,     // a pp-number: 1, 0x1f, 1.5e-3f, 2h
  literal,    // "..." or '...', with a u8 / u / U / L prefix if any
  punct,      // one character, or a multi-character operator the lowerings look for (::, ->, ...)
  space,      // a run of blanks, or one newline
  comment,    // // to the end of the line, or /* ... */
  directive,  // `#...` first on a line, to its end, backslash-newline continuations included
};

struct Token {
  TokenKind kind;
  std::string text;
  size_t offset = 0;  // of the token's first byte in the tokenized text
  uint32_t file = 0;  // index into Tokens::files: the file clang's line markers say the token comes from
  int line = 0;       // in that file
  // Code rather than whitespace, comments or directives.
  bool significant() const {
    return kind != TokenKind::space && kind != TokenKind::comment && kind != TokenKind::directive;
  }
  bool is(std::string_view s) const { return significant() && text == s; }
};

struct Tokens {
  std::vector<Token> tokens;
  // Source file names from `# LINE "FILE"` markers; files[0] is "<input>",
  // the name of text before any marker.
  std::vector<std::string> files;
};

Tokens tokenize(std::string_view text);

std::string join_tokens(const std::vector<Token>& tokens);

}  // namespace mfagen::msl
