#include "mfagen/msl/token_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "mfagen/msl/syntax_error.h"

namespace mfagen::msl {

TokenView::TokenView(std::string_view text) : original_(text) {
  Tokens tokenized = tokenize(original_);
  tokens_ = std::move(tokenized.tokens);
  files_ = std::move(tokenized.files);
  rewritten_.assign(tokens_.size(), false);
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i].significant()) significant_.push_back(i);
  // `[[ ... ]]`: the brackets match and the list closes with `]]`.
  in_attribute_.assign(significant_.size(), false);
  for (size_t k = 0; k + 1 < count(); ++k) {
    if (!is(k, "[") || !is(k + 1, "[")) continue;
    size_t end = find_matching(k);
    if (end >= count() || !is(end - 1, "]")) continue;
    for (size_t j = k; j <= end; ++j) in_attribute_[j] = true;
    k = end;
  }
}

std::string_view TokenView::original_text(size_t begin, size_t end) const {
  if (begin >= end || end > count()) return {};
  size_t from = at(begin).offset;
  size_t last = significant_[end - 1];
  size_t to = last + 1 < tokens_.size() ? tokens_[last + 1].offset : original_.size();
  return std::string_view(original_).substr(from, to - from);
}

size_t TokenView::declaration_body(size_t k) const {
  for (int depth = 0; k < count(); ++k) {
    if (is(k, "(") || is(k, "[")) ++depth;
    if (is(k, ")") || is(k, "]")) --depth;
    if (depth == 0 && is(k, ";")) return count();
    if (depth == 0 && is(k, "{")) return k;
  }
  return count();
}

size_t TokenView::find_matching(size_t k) const {
  std::string_view open = text(k);
  if (open == "<") return find_matching_angle(k);
  std::string_view close = open == "(" ? ")" : open == "[" ? "]" : "}";
  int depth = 0;
  for (size_t j = k; j < count(); ++j) {
    if (text(j) == open) ++depth;
    if (text(j) == close && --depth == 0) return j;
  }
  return count();
}

// A template argument list, read as C++ reads one ([temp.names]/3): a `>`
// (or each half of `>>`) closes the innermost list, except inside
// parentheses or brackets, which are skipped whole (`enable_if_t<(N > 2)>`);
// a `<` opens a nested list only after a name (`Foo<Bar<int>>`), so that
// `enable_if_t<sizeof(T) < 8, bool>` (MLX's scan.h) compares.
size_t TokenView::find_matching_angle(size_t k) const {
  int depth = 0;
  for (size_t j = k; j < count(); ++j) {
    std::string_view t = text(j);
    if (j > k && (t == "(" || t == "[")) {
      j = find_matching(j);
      if (j >= count()) return count();
      continue;
    }
    if (t == ";" || t == "{" || t == "}") return count();
    if (t == "<" && (j == k || is_identifier(j - 1) || is(j - 1, "template"))) ++depth;
    if (t == ">" && --depth == 0) return j;
    if (t == ">>") {
      depth -= 2;
      if (depth <= 0) return j;  // the second half closes this list (or both do)
    }
  }
  return count();
}

size_t TokenView::matching(size_t k) const {
  size_t close = find_matching(k);
  if (close == count()) fail(k, fmt::format("unbalanced '{}'", text(k)));
  return close;
}

void TokenView::fail(size_t k, const std::string& message) const {
  if (count() == 0) throw SyntaxError(fmt::format("{}:1: error: {}", files_[0], message), 0, 0);
  k = std::min(k, count() - 1);
  throw SyntaxError(fmt::format("{}:{}: error: {}", file(k), line(k), message), k, offset(k));
}

void TokenView::replace_token(size_t i, std::string s) {
  tokens_[i].text = std::move(s);
  rewritten_[i] = true;
}

std::string TokenView::joined() const {
  if (inserted_before_.empty()) return join_tokens(tokens_);
  return joined_with_origin().text;
}

TextWithOrigin TokenView::joined_with_origin() const {
  TextWithOrigin out;
  out.text.reserve(original_.size() + original_.size() / 4);
  out.origin.reserve(out.text.capacity() + 1);
  auto emit = [&](std::string_view text, size_t origin) {
    out.text += text;
    out.origin.insert(out.origin.end(), text.size(), static_cast<uint32_t>(origin));
  };
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const Token& token = tokens_[i];
    auto inserted = inserted_before_.find(i);
    if (inserted != inserted_before_.end()) emit(inserted->second, token.offset);
    if (!rewritten_[i]) {
      out.text += token.text;
      for (size_t j = 0; j < token.text.size(); ++j) out.origin.push_back(static_cast<uint32_t>(token.offset + j));
      continue;
    }
    emit(token.text, token.offset);
    // Keep the lines: the newlines the replacement lacks follow it, each at its own place.
    size_t end = i + 1 < tokens_.size() ? tokens_[i + 1].offset : original_.size();
    std::string_view was = std::string_view(original_).substr(token.offset, end - token.offset);
    auto kept = std::count(token.text.begin(), token.text.end(), '\n');
    for (size_t j = 0; j < was.size(); ++j)
      if (was[j] == '\n' && kept-- <= 0) emit("\n", token.offset + j);
  }
  out.origin.push_back(static_cast<uint32_t>(original_.size()));
  return out;
}

}  // namespace mfagen::msl
