#include "mfagen/msl/constexpr_constants.h"

#include <set>
#include <string_view>

#include "mfagen/msl/vector_syntax.h"

namespace mfagen::msl {
namespace {

const std::set<std::string_view> kDeclarationSpecifiers = {"static",   "inline",   "constexpr",
                                                            "const",    "constant", "volatile"};

// Whether the `constant` at k is a specifier of a constexpr variable whose
// declarator is a plain name followed by its initializer.
bool declares_constexpr_object(const TokenView& v, size_t k) {
  size_t first = k;
  while (first > 0 && kDeclarationSpecifiers.contains(v.text(first - 1))) --first;
  size_t last = k;
  while (kDeclarationSpecifiers.contains(v.text(last + 1))) ++last;
  bool is_constexpr = false;
  for (size_t j = first; j <= last; ++j) is_constexpr |= v.is(j, "constexpr");
  if (!is_constexpr) return false;
  // The declaration starts at the specifiers: after a statement, a member
  // access label (`public:`), a template header, or a macro's invocation
  // (`DEFINE_SIMD_EXCLUSIVE_SCAN()` before MLX's CumSum::init, where the
  // checker lowers the text before preprocessing).
  if (first > 0 && !(v.is(first - 1, ";") || v.is(first - 1, "{") || v.is(first - 1, "}") || v.is(first - 1, ":") ||
                     v.is(first - 1, ">") || v.is(first - 1, ")")))
    return false;
  size_t names = 0;
  for (size_t j = last + 1; j < v.count(); ++j) {
    if (v.is(j, "=") || v.is(j, "{")) return names >= 2;  // a type and the variable's name
    if (v.is_identifier(j)) {
      // A builtin scalar or vector stays: it copies out of __constant, and
      // a `constant int&` parameter binds it (MLX's sort.h passes
      // `constant constexpr const int zero_helper`).
      if (names == 0 && (is_scalar_type_name(v.text(j)) || is_vector_type_name(v.text(j)))) return false;
      if (v.is(j, "metal") && v.is(j + 1, "::")) continue;
      ++names;
      if (v.is(j + 1, "<")) {
        j = v.find_matching(j + 1);
        if (j >= v.count()) return false;
      }
    } else if (!v.is(j, "::")) {
      return false;  // `[`, `(`, `*`, `&`, `;` (no initializer), `,`: not this form
    }
  }
  return false;
}

}  // namespace

void lower_constexpr_constants(TokenView& v) {
  for (size_t k = 0; k < v.count(); ++k) {
    if (!v.is(k, "constant") || v.in_attribute(k) || v.in_standin(k)) continue;
    if (declares_constexpr_object(v, k)) v.replace(k, "");  // constexpr makes the object const
  }
}

}  // namespace mfagen::msl
