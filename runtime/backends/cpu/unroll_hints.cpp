#include "unroll_hints.h"

#include <cctype>
#include <string_view>

namespace mfagen::cpu {
namespace {

bool starts_with_word(std::string_view text, std::string_view word) {
  if (!text.starts_with(word)) return false;
  if (text.size() == word.size()) return true;
  char next = text[word.size()];
  return !(std::isalnum(static_cast<unsigned char>(next)) || next == '_');
}

std::string_view skip_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

bool is_unroll_hint(std::string_view line) {
  line = skip_blanks(line);
  if (!line.starts_with('#')) return false;
  line = skip_blanks(line.substr(1));
  if (!starts_with_word(line, "pragma")) return false;
  line = skip_blanks(line.substr(6));
  if (starts_with_word(line, "unroll") || starts_with_word(line, "nounroll")) return true;
  if (starts_with_word(line, "clang")) return starts_with_word(skip_blanks(line.substr(5)), "loop");
  if (starts_with_word(line, "GCC")) return starts_with_word(skip_blanks(line.substr(3)), "unroll");
  return false;
}

}  // namespace

int drop_unroll_hints(std::string& text) {
  // The text is preprocessed: a pragma is one line (no continuations left).
  int dropped = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (is_unroll_hint(std::string_view(text).substr(begin, end - begin))) {
      text.replace(begin, end - begin, end - begin, ' ');
      ++dropped;
    }
    begin = end + 1;
  }
  return dropped;
}

}  // namespace mfagen::cpu
