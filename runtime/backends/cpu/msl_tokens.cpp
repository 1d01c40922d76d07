#include "msl_tokens.h"

#include <cctype>
#include <charconv>

namespace mfagen::cpu {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Multi-character punctuators the lowering needs to see as one token; all
// others may be split into single characters without changing the text.
constexpr std::string_view kLongPuncts[] = {"->*", "::", "->", "==", "!=", "<=", ">=", "&&", "||", "++", "--"};

// Applies a `# LINE "FILE" flags` marker to the position tracker.
void apply_line_marker(std::string_view directive, std::string& file, int& line) {
  size_t i = 1;
  while (i < directive.size() && directive[i] == ' ') ++i;
  if (directive.substr(i, 4) == "line") i += 4;
  while (i < directive.size() && directive[i] == ' ') ++i;
  int value = 0;
  auto [end, ec] = std::from_chars(directive.data() + i, directive.data() + directive.size(), value);
  if (ec != std::errc()) return;
  line = value - 1;  // the newline ending the directive advances it
  size_t quote = directive.find('"', size_t(end - directive.data()));
  if (quote == std::string_view::npos) return;
  size_t close = directive.find('"', quote + 1);
  if (close != std::string_view::npos) file = std::string(directive.substr(quote + 1, close - quote - 1));
}

}  // namespace

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  std::string file = "<input>";
  int line = 1;
  bool at_line_start = true;
  size_t i = 0;
  auto push = [&](TokenKind kind, size_t begin, size_t end) {
    tokens.push_back(Token{kind, std::string(text.substr(begin, end - begin)), file, line});
  };
  while (i < text.size()) {
    char c = text[i];
    size_t begin = i;
    if (c == '\n') {
      push(TokenKind::space, i, i + 1);
      ++line;
      ++i;
      at_line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\f' ||
                                 text[i] == '\v'))
        ++i;
      push(TokenKind::space, begin, i);
      continue;
    }
    if (c == '#' && at_line_start) {
      while (i < text.size() && text[i] != '\n') ++i;
      push(TokenKind::directive, begin, i);
      apply_line_marker(text.substr(begin, i - begin), file, line);
      continue;
    }
    at_line_start = false;
    if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      if (text[i + 1] == '/') {
        while (i < text.size() && text[i] != '\n') ++i;
      } else {
        size_t close = text.find("*/", i + 2);
        i = close == std::string_view::npos ? text.size() : close + 2;
        for (size_t k = begin; k < i; ++k) line += text[k] == '\n';
      }
      tokens.push_back(Token{TokenKind::space, std::string(text.substr(begin, i - begin)), file, line});
      continue;
    }
    if (is_ident_start(c)) {
      while (i < text.size() && is_ident_char(text[i])) ++i;
      // String prefixes (u8"...", L'x', R"(...)") are rare in MSL; keep them identifiers.
      push(TokenKind::identifier, begin, i);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < text.size() &&
                                                         std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      // pp-number: digits, letters, dots, and signs after an exponent letter.
      ++i;
      while (i < text.size()) {
        char d = text[i];
        if (is_ident_char(d) || d == '.' || d == '\'') {
          ++i;
        } else if ((d == '+' || d == '-') && (text[i - 1] == 'e' || text[i - 1] == 'E' || text[i - 1] == 'p' ||
                                              text[i - 1] == 'P')) {
          ++i;
        } else {
          break;
        }
      }
      push(TokenKind::number, begin, i);
      continue;
    }
    if (c == '"' || c == '\'') {
      ++i;
      while (i < text.size() && text[i] != c && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
      i = std::min(i + 1, text.size());
      push(TokenKind::literal, begin, i);
      continue;
    }
    size_t length = 1;
    for (std::string_view p : kLongPuncts) {
      if (text.substr(i, p.size()) == p) {
        length = p.size();
        break;
      }
    }
    i += length;
    push(TokenKind::punct, begin, i);
  }
  return tokens;
}

std::string join_tokens(const std::vector<Token>& tokens) {
  std::string out;
  size_t size = 0;
  for (const Token& t : tokens) size += t.text.size();
  out.reserve(size);
  for (const Token& t : tokens) out += t.text;
  return out;
}

}  // namespace mfagen::cpu
