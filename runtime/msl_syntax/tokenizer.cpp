#include "mfagen/msl/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace mfagen::msl {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Multi-character punctuators the lowerings need to see as one token; all
// others may be split into single characters without changing the text.
constexpr std::string_view kLongPuncts[] = {"->*", "::", "->", "==", "!=", "<=", ">=", "&&", "||", "++", "--"};

// Encoding prefixes that make `u8"..."` or `L'x'` one literal.
bool is_literal_prefix(std::string_view s) { return s == "u8" || s == "u" || s == "U" || s == "L"; }

// End of the quoted literal opening at `quote`: after the closing quote, or
// at the end of the line when it is unterminated (the newline stays a token).
size_t literal_end(std::string_view text, size_t quote) {
  char close = text[quote];
  size_t i = quote + 1;
  while (i < text.size() && text[i] != close && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
  i = std::min(i, text.size());
  return i < text.size() && text[i] == close ? i + 1 : i;
}

// A pp-number: digits, letters, dots, digit separators, and signs after an exponent letter.
size_t number_end(std::string_view text, size_t begin) {
  size_t i = begin + 1;
  while (i < text.size()) {
    char c = text[i];
    char before = text[i - 1];
    bool exponent_sign = (c == '+' || c == '-') && (before == 'e' || before == 'E' || before == 'p' || before == 'P');
    if (!is_ident_char(c) && c != '.' && c != '\'' && !exponent_sign) break;
    ++i;
  }
  return i;
}

// A directive runs to the end of its line; a backslash before the newline continues it.
size_t directive_end(std::string_view text, size_t begin) {
  size_t i = begin;
  while (i < text.size() && text[i] != '\n') i += text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
  return i;
}

size_t comment_end(std::string_view text, size_t begin) {
  if (text[begin + 1] == '/') return std::min(text.find('\n', begin), text.size());
  size_t close = text.find("*/", begin + 2);
  return close == std::string_view::npos ? text.size() : close + 2;
}

size_t punct_end(std::string_view text, size_t begin) {
  for (std::string_view p : kLongPuncts)
    if (text.substr(begin, p.size()) == p) return begin + p.size();
  return begin + 1;
}

// Where the text comes from, as clang's `# LINE "FILE" flags` markers say.
class Position {
 public:
  explicit Position(std::vector<std::string>& files) : files_(files) { files_.assign(1, "<input>"); }
  uint32_t file() const { return file_; }
  int line() const { return line_; }

  // Advances past a token: a line marker sets the position of the next line,
  // anything else moves on by the newlines it contains.
  void advance(const Token& token) {
    if (token.kind == TokenKind::directive && apply_line_marker(token.text)) return;
    line_ += static_cast<int>(std::count(token.text.begin(), token.text.end(), '\n'));
  }

 private:
  bool apply_line_marker(std::string_view directive) {
    size_t i = 1;
    while (i < directive.size() && directive[i] == ' ') ++i;
    if (directive.substr(i, 4) == "line") i += 4;
    while (i < directive.size() && directive[i] == ' ') ++i;
    int value = 0;
    auto [end, ec] = std::from_chars(directive.data() + i, directive.data() + directive.size(), value);
    if (ec != std::errc()) return false;
    line_ = value - 1;  // the newline ending the directive advances it
    size_t quote = directive.find('"', size_t(end - directive.data()));
    if (quote == std::string_view::npos) return true;
    size_t close = directive.find('"', quote + 1);
    if (close != std::string_view::npos) file_ = file_index(directive.substr(quote + 1, close - quote - 1));
    return true;
  }

  uint32_t file_index(std::string_view name) {
    auto known = std::find(files_.begin(), files_.end(), name);
    if (known == files_.end()) known = files_.insert(files_.end(), std::string(name));
    return static_cast<uint32_t>(known - files_.begin());
  }

  std::vector<std::string>& files_;
  uint32_t file_ = 0;
  int line_ = 1;
};

}  // namespace

Tokens tokenize(std::string_view text) {
  Tokens out;
  Position position(out.files);
  bool at_line_start = true;  // only blanks and comments since the last newline
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    const size_t begin = i;
    TokenKind kind = TokenKind::punct;
    if (c == '\n') {
      kind = TokenKind::space;
      i = begin + 1;
    } else if (is_blank(c)) {
      kind = TokenKind::space;
      while (i < text.size() && is_blank(text[i])) ++i;
    } else if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      kind = TokenKind::comment;
      i = comment_end(text, begin);
    } else if (c == '#' && at_line_start) {
      kind = TokenKind::directive;
      i = directive_end(text, begin);
    } else if (is_ident_start(c)) {
      kind = TokenKind::identifier;
      while (i < text.size() && is_ident_char(text[i])) ++i;
      if (i < text.size() && (text[i] == '"' || text[i] == '\'') && is_literal_prefix(text.substr(begin, i - begin))) {
        kind = TokenKind::literal;
        i = literal_end(text, i);
      }
    } else if (is_digit(c) || (c == '.' && i + 1 < text.size() && is_digit(text[i + 1]))) {
      kind = TokenKind::number;
      i = number_end(text, begin);
    } else if (c == '"' || c == '\'') {
      kind = TokenKind::literal;
      i = literal_end(text, begin);
    } else {
      i = punct_end(text, begin);
    }
    if (c == '\n') at_line_start = true;
    else if (kind != TokenKind::space && kind != TokenKind::comment) at_line_start = false;
    Token token{kind, std::string(text.substr(begin, i - begin)), begin, position.file(), position.line()};
    position.advance(token);
    out.tokens.push_back(std::move(token));
  }
  return out;
}

std::string join_tokens(const std::vector<Token>& tokens) {
  size_t size = 0;
  for (const Token& t : tokens) size += t.text.size();
  std::string out;
  out.reserve(size);
  for (const Token& t : tokens) out += t.text;
  return out;
}

}  // namespace mfagen::msl
