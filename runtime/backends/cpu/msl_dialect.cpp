#include "msl_dialect.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mfagen/msl/dependent_casts.h"
#include "mfagen/msl/function_pointers.h"
#include "mfagen/msl/short_vector_braces.h"
#include "mfagen/msl/vec_partial_specializations.h"

namespace mfagen::cpu {
namespace {

using msl::TokenView;

// C++ for OpenCL types a local or parameter `int x` as `__private int`, so
// decltype(x) would carry an address space Metal's `thread int` does not
// show (MLX: integral_constant<decltype(res), res> with a static constant
// member). __mf_unprivate_t drops a top-level __private and nothing else.
void lower_decltype(TokenView& v) {
  for (size_t k = 0; k + 2 < v.count(); ++k) {
    if (!v.is(k, "decltype") || !v.is(k + 1, "(") || v.is(k + 2, "auto") || v.in_attribute(k)) continue;
    size_t close = v.matching(k + 1);
    // decltype(f<...>) names a function type (llama.cpp's kernel typedefs); leave it.
    if (v.is_identifier(k + 2) && v.is(k + 3, "<") && v.matching(k + 3) + 1 == close) continue;
    v.replace(k, "__mf_unprivate_t<decltype");
    v.replace(close, ")> ");
  }
}

// reinterpret_cast<thread T&>(x) -> __mf_reinterpret_ref<T&>(x) (see
// mfagen_standin/lowering_support.h); casts to device, threadgroup or
// constant references keep their matching address space and stay as written.
void lower_reference_reinterpret_casts(TokenView& v) {
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "reinterpret_cast") || !v.is(k + 1, "<")) continue;
    size_t close = v.matching(k + 1);
    if (!v.is(close - 1, "&") || v.is(close - 2, "&")) continue;
    bool shared_space = false;
    for (size_t j = k + 2; j < close; ++j)
      shared_space |= v.is(j, "device") || v.is(j, "constant") || v.is(j, "threadgroup");
    if (!shared_space) v.replace(k, "__mf_reinterpret_ref");
  }
}

// Metal's vec<T, N> deduces T and N; the stand-in's goes through a trait
// (so that vec<bfloat, N> and vec<bool, N>, which clang cannot make ext
// vectors of, exist) and does not. Alias templates over vec exist to be
// deduced through (MLX: `template <typename U> using dtype_frag_t =
// typename metal::vec<U, 8>;` and `load(thread dtype_frag_t<T>& dst, ...)`,
// with T = half, float, bfloat or bool). No pattern deduces a bfloat struct
// and an ext vector alike, so a function template's parameter
// `NAME<T>` (NAME such an alias, T one of its type parameters) becomes a
// deduced type of its own, `__mf_vec_T_0`, and T follows from it:
//   template <typename T, class S> void load(thread dtype_frag_t<T>& d, S s)
//   -> template <typename __mf_vec_T_0, class S, typename T =
//        ::__mf_vec_lelem_t<__mf_vec_T_0>, ::__mf_if<
//        ::__mf_vec_alias_matches<__mf_vec_T_0, dtype_frag_t, T>()> = 0>
//      void load(thread __mf_vec_T_0& d, S s)
// (each occurrence its own type, so arguments in different address spaces
// still deduce one T). The check keeps the function exactly where Metal's
// deduction succeeds (mfagen_standin/vector_types.h). A T named anywhere else
// in the template parameter list, given a default, or a pack is left as
// written.
void lower_vec_in_alias_templates(TokenView& v) {
  std::set<std::string, std::less<>> aliases;
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    if (v.in_standin(k)) continue;
    size_t close = v.matching(k + 1);
    // exactly one type parameter: template <typename U>
    if (close != k + 4 || !(v.is(k + 2, "typename") || v.is(k + 2, "class")) || !v.is_identifier(k + 3)) continue;
    if (!v.is(close + 1, "using") || !v.is_identifier(close + 2) || !v.is(close + 3, "=")) continue;
    size_t j = close + 4;
    if (v.is(j, "typename")) ++j;
    if (v.is(j, "::")) ++j;
    if (v.is(j, "metal") && v.is(j + 1, "::")) j += 2;
    if (!v.is(j, "vec") || !v.is(j + 1, "<")) continue;
    size_t vclose = v.matching(j + 1);
    if (v.is(vclose + 1, ";")) aliases.emplace(v.text(close + 2));
  }
  if (aliases.empty()) return;
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    if (v.in_standin(k)) continue;
    size_t close = v.matching(k + 1);
    if (close == k + 2) continue;  // explicit specialization
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
    size_t pclose = v.matching(open);
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

}  // namespace

void lower_dialect_differences(TokenView& v) {
  lower_decltype(v);
  lower_reference_reinterpret_casts(v);
  // The function pointers extension (msl_lowering.cpp) admits them too.
  if (std::vector<size_t> at = msl::virtual_specifiers(v); !at.empty()) v.fail(at.front(), msl::kVirtualFunctionMessage);
  msl::lower_function_pointer_template_parameters(v);
  msl::lower_short_vector_braces(v);
  msl::lower_dependent_casts(v, [&](size_t k, const std::string& message) { v.fail(k, message); });
  msl::lower_vec_partial_specializations(v);
  lower_vec_in_alias_templates(v);
}

}  // namespace mfagen::cpu
