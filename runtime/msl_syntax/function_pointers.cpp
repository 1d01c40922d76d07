#include "mfagen/msl/function_pointers.h"

#include <string_view>
#include <utility>
#include <vector>

namespace mfagen::msl {
namespace {


// `R (*)(` or `R (* NAME)(` at `open`: the index of `*`, or 0.
size_t pointer_to_function_at(const TokenView& v, size_t open) {
  if (!v.is(open, "(") || !v.is(open + 1, "*")) return 0;
  if (v.is(open + 2, ")") && v.is(open + 3, "(")) return open + 1;
  if (v.is_identifier(open + 2) && v.is(open + 3, ")") && v.is(open + 4, "(")) return open + 1;
  return 0;
}

}  // namespace

void lower_function_pointer_template_parameters(TokenView& v) {
  // Template parameter lists [open, close] and where each parameter begins.
  std::vector<std::pair<size_t, size_t>> lists;
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<") || v.in_standin(k)) continue;
    size_t close = v.find_matching(k + 1);
    if (close >= v.count()) continue;
    lists.emplace_back(k + 1, close);
    for (size_t j = k + 2; j + 3 < close; ++j) {
      size_t star = pointer_to_function_at(v, j);
      if (star && v.is_identifier(star + 1)) v.replace(star, "&");
    }
  }
  // Whether token j begins a parameter of a template parameter list, at its depth 0.
  auto begins_template_parameter = [&](size_t j) {
    for (auto [open, close] : lists) {
      if (j <= open || j >= close) continue;
      if (v.is(j - 1, "<") && j - 1 == open) return true;
      if (!v.is(j - 1, ",")) return false;
      int depth = 0;
      for (size_t i = open + 1; i < j; ++i) {
        if (v.is(i, "(") || v.is(i, "[") || v.is(i, "{")) ++depth;
        if (v.is(i, ")") || v.is(i, "]") || v.is(i, "}")) --depth;
        if (v.is(i, "<")) {
          size_t m = v.find_matching(i);
          if (m < close && m >= j) return false;
          if (m < close) i = m;
        }
      }
      return depth == 0;
    }
    return false;
  };
  // Aliases `[template <...>] using F = R (*)(...);` used only as template parameter types.
  for (size_t k = 0; k + 4 < v.count(); ++k) {
    if (!v.is(k, "using") || !v.is_identifier(k + 1) || !v.is(k + 2, "=") || v.in_standin(k)) continue;
    size_t star = 0, j = k + 3;
    for (; j < v.count() && !v.is(j, ";") && !v.is(j, "{"); ++j) {
      if (v.is(j, "(")) {
        star = pointer_to_function_at(v, j);
        break;
      }
    }
    if (!star || !v.is(star + 1, ")")) continue;
    size_t params = star + 2, end = v.find_matching(params);
    if (end >= v.count() || !v.is(end + 1, ";")) continue;
    std::string_view name = v.text(k + 1);
    bool only_template_parameters = true, used = false;
    for (size_t u = 0; u < v.count() && only_template_parameters; ++u) {
      if (u == k + 1 || !v.is(u, name)) continue;
      if (v.is(u - 1, ".") || v.is(u - 1, "->")) continue;
      used = true;
      only_template_parameters = begins_template_parameter(u);
    }
    if (used && only_template_parameters) v.replace(star, "&");
  }
}

std::vector<size_t> virtual_specifiers(const TokenView& v) {
  std::vector<size_t> out;
  for (size_t k = 0; k < v.count(); ++k)
    if (v.is(k, "virtual") && !v.in_attribute(k) && !v.in_standin(k)) out.push_back(k);
  return out;
}

}  // namespace mfagen::msl
