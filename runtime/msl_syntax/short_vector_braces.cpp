#include "mfagen/msl/short_vector_braces.h"

#include <fmt/format.h>

#include <regex>
#include <string>

namespace mfagen::msl {

void lower_short_vector_braces(TokenView& v) {
  static const std::regex vector_type("(float|half|int|uint|short|ushort|char|uchar|long|ulong)[234]");
  for (size_t k = 0; k + 3 < v.count(); ++k) {
    size_t last = k;  // the type's last token
    std::string type;
    if (v.is_identifier(k) && std::regex_match(std::string(v.text(k)), vector_type)) {
      type = v.text(k);
    } else if (v.is(k, "vec") && v.is(k + 1, "<") && (!v.is(k - 1, "::") || v.is(k - 2, "metal"))) {
      last = v.find_matching(k + 1);
      if (last >= v.count()) continue;
      type = v.is(k - 1, "::") ? "metal::" : "";
      for (size_t j = k; j <= last; ++j) type += fmt::format("{}{}", v.text(j), v.is(j, ",") ? " " : "");
    } else {
      continue;
    }
    // `float4 a = {0.f}, b{0.f};`: every declarator of the declaration.
    for (size_t name = last + 1; v.is_identifier(name);) {
      const bool copy = v.is(name + 1, "=") && v.is(name + 2, "{");
      if (!copy && !v.is(name + 1, "{")) break;
      const size_t open = copy ? name + 2 : name + 1;
      size_t close = v.find_matching(open);  // unbalanced: left as written (not this pass's to report)
      if (close >= v.count()) break;
      bool nested = false;
      for (size_t j = open + 1; j < close; ++j) nested |= v.is(j, "{");
      if (!nested) {
        v.replace(open, fmt::format("{}__mf_vector_braces<{}>(", copy ? "" : "= ", type));
        v.replace(close, ")");
      }
      if (!v.is(close + 1, ",")) break;
      name = close + 2;
    }
    k = last;
  }
}

}  // namespace mfagen::msl
