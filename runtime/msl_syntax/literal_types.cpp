#include "mfagen/msl/literal_types.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "mfagen/msl/tokenizer.h"

namespace mfagen::msl {
namespace {

bool is_hex(std::string_view number) {
  return number.size() > 1 && number[0] == '0' && (number[1] == 'x' || number[1] == 'X');
}

// The pp-number without digit separators ('), as strtod reads it.
std::string plain(std::string_view number) {
  std::string s;
  for (char c : number)
    if (c != '\'') s += c;
  return s;
}

}  // namespace

size_t define_body(std::string_view directive) {
  size_t i = 1;  // past '#'
  while (i < directive.size() && (directive[i] == ' ' || directive[i] == '\t')) ++i;
  if (directive.substr(i, 6) != "define") return std::string_view::npos;
  i += 6;
  if (i >= directive.size() || !(directive[i] == ' ' || directive[i] == '\t')) return std::string_view::npos;
  return i;
}

bool is_floating_literal(std::string_view number) {
  if (number.empty() || !(std::isdigit(static_cast<unsigned char>(number[0])) || number[0] == '.')) return false;
  if (is_hex(number)) return number.find_first_of("pP") != std::string_view::npos;
  return number.find_first_of(".eE") != std::string_view::npos;
}

bool is_long_double_literal(std::string_view number) {
  return is_floating_literal(number) && (number.back() == 'l' || number.back() == 'L');
}

std::optional<std::string> as_float_literal(std::string_view number) {
  if (!is_floating_literal(number)) return std::nullopt;
  const std::string text = plain(number);
  // Unsuffixed: the literal ends in a digit, or in the '.' of `1.`.
  const char last = text.back();
  if (!(std::isdigit(static_cast<unsigned char>(last)) || last == '.')) return std::nullopt;
  if (is_hex(text) && !std::isdigit(static_cast<unsigned char>(last))) return std::nullopt;
  char* end = nullptr;
  const double wide = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;  // not a literal strtod reads whole
  const float via_double = static_cast<float>(wide);
  const float nearest = std::strtof(text.c_str(), nullptr);
  if (std::memcmp(&via_double, &nearest, sizeof(float)) == 0) return std::string(number) + "f";
  return fmt::format("{:a}f", static_cast<double>(via_double));
}

void type_floating_literals_as_float(TokenView& v) {
  for (size_t k = 0; k < v.count(); ++k)
    if (v.is_number(k) && !v.in_attribute(k))
      if (std::optional<std::string> typed = as_float_literal(v.text(k))) v.replace(k, *typed);
  // Macro bodies, token by token (the directive is one token of the view).
  const std::vector<Token>& tokens = v.tokens();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::directive) continue;
    const std::string& directive = tokens[i].text;
    const size_t body = define_body(directive);
    if (body == std::string_view::npos) continue;
    std::string rewritten = directive.substr(0, body);
    bool changed = false;
    for (const Token& t : tokenize(std::string_view(directive).substr(body)).tokens) {
      std::optional<std::string> typed = t.kind == TokenKind::number ? as_float_literal(t.text) : std::nullopt;
      changed |= typed.has_value();
      rewritten += typed ? *typed : t.text;
    }
    if (changed) v.replace_token(i, std::move(rewritten));
  }
}

}  // namespace mfagen::msl
