#include "mfagen/msl/redundant_constexpr_definitions.h"

#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace mfagen::msl {
namespace {

const std::set<std::string_view> kSpecifiers = {"constant", "const", "constexpr", "inline", "volatile"};

// The `;` ending the redundant definition whose specifiers start at s, or
// 0 when the declaration is anything else.
size_t redundant_definition_end(const TokenView& v, size_t s) {
  size_t j = s;
  bool constexpr_seen = false;
  for (; kSpecifiers.contains(v.text(j)); ++j) constexpr_seen |= v.is(j, "constexpr");
  if (!constexpr_seen) return 0;
  // The type and the declarator as units: a name (with its `<...>`), `::`, `*` or `&`.
  enum class Unit { name, scope, pointer };
  std::vector<Unit> units;
  for (; j < v.count() && !v.is(j, "[") && !v.is(j, ";"); ++j) {
    if (v.is_identifier(j)) {
      units.push_back(Unit::name);
      if (v.is(j + 1, "<")) {
        j = v.find_matching(j + 1);
        if (j >= v.count()) return 0;
      }
    } else if (v.is(j, "::")) {
      units.push_back(Unit::scope);
    } else if (v.is(j, "*") || v.is(j, "&")) {
      units.push_back(Unit::pointer);
    } else {
      return 0;  // `=`, `{`, `(`, `,`, a literal: not this form
    }
  }
  for (; v.is(j, "["); ++j) {  // array bounds: `[8][8]`
    j = v.find_matching(j);
    if (j >= v.count()) return 0;
  }
  if (!v.is(j, ";")) return 0;
  // From the end: NAME (:: NAME)+, with a type before it.
  size_t n = units.size(), scopes = 0;
  if (n == 0 || units[n - 1] != Unit::name) return 0;
  size_t i = n - 1;
  while (i >= 2 && units[i - 1] == Unit::scope && units[i - 2] == Unit::name) {
    i -= 2;
    ++scopes;
  }
  return scopes > 0 && i > 0 && units[i - 1] != Unit::scope ? j : 0;
}

}  // namespace

void drop_redundant_constexpr_member_definitions(TokenView& v) {
  std::vector<std::pair<size_t, size_t>> dropped;  // first and last token
  for (size_t k = 0; k < v.count(); ++k) {
    bool statement_start = k == 0 || v.is(k - 1, ";") || v.is(k - 1, "}") || v.is(k - 1, "{");
    if (!statement_start || !(v.is(k, "template") || kSpecifiers.contains(v.text(k)))) continue;
    if (v.file(k).find("/mfagen_standin/") != std::string_view::npos) continue;
    size_t s = k;
    if (v.is(k, "template") && v.is(k + 1, "<")) {
      size_t close = v.find_matching(k + 1);
      if (close >= v.count()) continue;
      s = close + 1;
    }
    size_t end = redundant_definition_end(v, s);
    if (!end) continue;
    dropped.emplace_back(k, end);
    k = end - 1;  // the next declaration starts after this `;`
  }
  for (auto [begin, end] : dropped)
    for (size_t j = begin; j <= end; ++j) v.replace(j, "");
}

}  // namespace mfagen::msl
