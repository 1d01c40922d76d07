#include "mfagen/msl/vec_partial_specializations.h"

#include <fmt/format.h>

#include <cctype>
#include <string>

namespace mfagen::msl {

void lower_vec_partial_specializations(TokenView& v) {
  for (size_t k = 0; k + 6 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    // The stand-in spells out what the lowerings insert.
    if (v.file(k).find("/mfagen_standin/") != std::string_view::npos) continue;
    size_t close = v.find_matching(k + 1);
    if (close != k + 4 || !(v.is(k + 2, "typename") || v.is(k + 2, "class")) || !v.is_identifier(k + 3)) continue;
    bool is_struct = v.is(close + 1, "struct");
    if (!is_struct && !v.is(close + 1, "class")) continue;
    if (!v.is_identifier(close + 2) || !v.is(close + 3, "<")) continue;
    size_t args_open = close + 3, args_close = v.find_matching(args_open);
    if (args_close >= v.count() || !v.is(args_close + 1, "{")) continue;
    const std::string t(v.text(k + 3));
    size_t uses = 0, vec_at = 0, vec_begin = 0;
    for (size_t j = args_open + 1; j < args_close; ++j) {
      if (v.text(j) != t) continue;
      ++uses;
      // [::][metal::]vec < T , N >
      if (v.is(j - 1, "<") && v.is(j - 2, "vec") && v.is(j + 1, ",") && v.is(j + 3, ">") &&
          std::isdigit(static_cast<unsigned char>(v.text(j + 2)[0]))) {
        vec_at = j;
        vec_begin = j - 2;
        if (v.is(vec_begin - 1, "::") && v.is(vec_begin - 2, "metal")) vec_begin -= 2;
        if (v.is(vec_begin - 1, "::")) --vec_begin;
      }
    }
    if (uses != 1 || !vec_at) continue;
    std::string n(v.text(vec_at + 2));
    std::string elem = fmt::format("__mf_vec_elem_{}", t);
    std::string ext = fmt::format("::__mf_ext_vec<{}, {}>", elem, n);
    // The undefined specialization for the bfloat vector, before this one.
    std::string bfloat_args;
    for (size_t j = args_open + 1; j < args_close; ++j) {
      if (j == vec_begin) {
        bfloat_args += fmt::format(" ::metal::vec<bfloat, {}>", n);
        j = vec_at + 3;
        continue;
      }
      bfloat_args += " " + std::string(v.text(j));
    }
    v.insert_before(k, fmt::format("template <> {} {}<{}>; ", is_struct ? "struct" : "class", v.text(close + 2),
                                   bfloat_args));
    v.replace(k + 3, elem);
    for (size_t j = vec_begin; j <= vec_at + 3; ++j) v.replace(j, j == vec_begin ? ext : "");
    v.insert_before(args_close + 2, fmt::format("{}typedef ::__mf_vec_lelem_t<{}> {};{} ", is_struct ? "private: " : "",
                                                ext, t, is_struct ? " public:" : ""));
    k = args_close;
  }
}

}  // namespace mfagen::msl
