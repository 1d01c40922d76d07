#include "mfagen/msl/vec_alias_templates.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace mfagen::msl {

void lower_vec_in_alias_templates(TokenView& v) {
  std::set<std::string, std::less<>> aliases;
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    if (v.in_standin(k)) continue;
    size_t close = v.find_matching(k + 1);
    if (close >= v.count()) continue;
    // exactly one type parameter: template <typename U>
    if (close != k + 4 || !(v.is(k + 2, "typename") || v.is(k + 2, "class")) || !v.is_identifier(k + 3)) continue;
    if (!v.is(close + 1, "using") || !v.is_identifier(close + 2) || !v.is(close + 3, "=")) continue;
    size_t j = close + 4;
    if (v.is(j, "typename")) ++j;
    if (v.is(j, "::")) ++j;
    if (v.is(j, "metal") && v.is(j + 1, "::")) j += 2;
    if (!v.is(j, "vec") || !v.is(j + 1, "<")) continue;
    size_t vclose = v.find_matching(j + 1);
    if (vclose >= v.count()) continue;
    if (v.is(vclose + 1, ";")) aliases.emplace(v.text(close + 2));
  }
  if (aliases.empty()) return;
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    if (v.in_standin(k)) continue;
    size_t close = v.find_matching(k + 1);
    if (close >= v.count() || close == k + 2) continue;  // explicit specialization
    size_t after = close + 1;
    if (v.is(after, "using") || v.is(after, "struct") || v.is(after, "class") || v.is(after, "union") ||
        v.is(after, "template") || v.is(after, "friend"))
      continue;
    // The function's parameter list: the first `name (` at depth 0 before ; { =
    size_t open = 0;
    for (size_t j = after; j < v.count(); ++j) {
      if (v.is(j, ";") || v.is(j, "{") || v.is(j, "=")) break;
      if (v.is(j, "<") && !v.is(j - 1, "operator")) {
        size_t m = v.find_matching(j);
        if (m >= v.count()) break;
        j = m;
        continue;
      }
      if (v.is(j, "[")) {  // [[attributes]]
        size_t m = v.find_matching(j);
        if (m >= v.count()) break;
        j = m;
        continue;
      }
      if (v.is(j, "(")) {
        if (v.is(j - 1, "__attribute__") || v.is(j - 1, "decltype") || v.is(j - 1, "alignas") ||
            v.is(j - 1, "__declspec")) {
          size_t m = v.find_matching(j);
          if (m >= v.count()) break;
          j = m;
          continue;
        }
        if (v.is_identifier(j - 1)) open = j;
        break;
      }
    }
    if (!open) continue;
    size_t pclose = v.find_matching(open);
    if (pclose >= v.count()) continue;
    // The template's type parameters without default: name -> token index.
    std::map<std::string, size_t, std::less<>> type_params;
    std::set<std::string, std::less<>> excluded;
    for (size_t j = k + 2; j < close; ++j) {
      if (v.is(j, "<") || v.is(j, "(") || v.is(j, "[") || v.is(j, "{")) {
        size_t m = v.find_matching(j);
        if (m < close) j = m;
        continue;
      }
      bool starts = j == k + 2 || v.is(j - 1, ",");
      if (starts && (v.is(j, "typename") || v.is(j, "class")) && v.is_identifier(j + 1) &&
          (v.is(j + 2, ",") || j + 2 == close))
        type_params.emplace(v.text(j + 1), j + 1);
    }
    if (type_params.empty()) continue;
    // A type parameter named elsewhere in the template parameter list stays.
    for (size_t j = k + 2; j < close; ++j)
      if (v.is_identifier(j) && type_params.count(v.text(j)) && type_params.at(std::string(v.text(j))) != j)
        excluded.emplace(v.text(j));
    // Occurrences NAME < T > in the parameter list.
    std::map<std::string, std::vector<size_t>, std::less<>> uses;
    std::map<std::string, std::string, std::less<>> alias_of;
    for (size_t j = open + 1; j + 3 <= pclose; ++j) {
      if (!v.is_identifier(j) || !aliases.count(v.text(j)) || !v.is(j + 1, "<") || !v.is(j + 3, ">")) continue;
      if (v.is(j - 1, "::") || v.is(j - 1, ".") || v.is(j - 1, "->") || v.is(j - 1, "template")) continue;
      std::string t(v.text(j + 2));
      if (!type_params.count(t) || excluded.count(t)) continue;
      if (alias_of.count(t) && alias_of[t] != v.text(j)) {
        excluded.emplace(t);
        continue;
      }
      alias_of[t] = std::string(v.text(j));
      uses[t].push_back(j);
    }
    std::string added;
    for (auto& [t, at] : uses) {
      if (excluded.count(t)) continue;
      std::string check;
      for (size_t i = 0; i < at.size(); ++i) {
        std::string name = fmt::format("__mf_vec_{}_{}", t, i);
        v.replace(at[i], name);
        v.replace(at[i] + 1, "");
        v.replace(at[i] + 2, "");
        v.replace(at[i] + 3, "");
        if (i) added += fmt::format(", typename {}", name);
        check += fmt::format("{}::__mf_vec_alias_matches<{}, {}, {}>()", i ? " && " : "", name, alias_of[t], t);
      }
      v.replace(type_params.at(t), fmt::format("__mf_vec_{}_0", t));
      added += fmt::format(", typename {} = ::__mf_vec_lelem_t<__mf_vec_{}_0>, ::__mf_if<{}> = 0", t, t, check);
    }
    if (!added.empty()) v.insert_before(close, added);
  }
}


}  // namespace mfagen::msl
