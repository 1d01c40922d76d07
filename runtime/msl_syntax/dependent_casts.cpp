#include "mfagen/msl/dependent_casts.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <string_view>

#include "mfagen/msl/cast_context.h"

namespace mfagen::msl {
namespace {

// `thread ValT (&vals)[N]` (MLX's sort.h, a parameter): the type T at j
// followed by a parenthesized declarator, not T's constructor. Told by a
// qualifier before T (an address space, const, volatile: no expression
// puts one before a construction), or by the form `T (&name)[` / `T (*name)[`,
// a reference or pointer to an array.
bool declares_parenthesized_declarator(const TokenView& v, size_t j) {
  static const std::set<std::string_view> qualifiers = {"thread", "device", "threadgroup", "constant",
                                                        "const",  "volatile"};
  if (j > 0 && qualifiers.contains(v.text(j - 1))) return true;
  return (v.is(j + 2, "&") || v.is(j + 2, "*")) && v.is_identifier(j + 3) && v.is(j + 4, ")") && v.is(j + 5, "[");
}

}  // namespace

void lower_dependent_casts(TokenView& v, const UnaryBeforeCastHandler& on_unary_before_cast) {
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    if (v.in_standin(k)) continue;
    // Unbalanced brackets are not this pass's to report (the checker reads
    // files that may not parse): such a template is left as written.
    size_t close = v.find_matching(k + 1);
    if (close >= v.count()) continue;
    std::set<std::string, std::less<>> type_parameters;
    for (size_t j = k + 2; j + 1 < close; ++j)
      if ((v.is(j, "typename") || v.is(j, "class")) && v.is_identifier(j + 1) && !v.is(j + 1, "...") &&
          (v.is(j + 2, ",") || v.is(j + 2, "=") || j + 2 == close))
        type_parameters.emplace(v.text(j + 1));
    if (type_parameters.empty()) continue;
    const size_t body = v.declaration_body(close + 1);
    if (body >= v.count()) continue;
    size_t end = v.find_matching(body);
    if (end >= v.count()) continue;
    for (size_t j = body; j + 3 < end; ++j) {
      bool functional = type_parameters.contains(v.text(j)) && v.is(j + 1, "(") && !v.is(j - 1, ".") &&
                        !v.is(j - 1, "->") && !v.is(j - 1, "::") && !v.is(j - 1, "operator") &&
                        !declares_parenthesized_declarator(v, j);
      if (functional) {  // T(args...)
        v.replace(j, fmt::format("::metal::__mf_dep_ctor<{}>", v.text(j)));
        continue;
      }
      if (!v.is(j, "(") || !v.is(j + 2, ")") || !type_parameters.contains(v.text(j + 1))) continue;
      CastContext context = cast_context(v, j, j + 3);
      if (context == CastContext::cast_after_unary_operator) {
        on_unary_before_cast(j, unary_operator_before_cast_message(v, j));
        continue;
      }
      if (context == CastContext::not_a_cast) continue;
      v.replace(j, "");
      v.replace(j + 1, fmt::format("::metal::__mf_dep_cast<{}>{{}} ->*", v.text(j + 1)));
      v.replace(j + 2, "");
    }
  }
}

}  // namespace mfagen::msl
