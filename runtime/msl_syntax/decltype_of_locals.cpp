#include "mfagen/msl/decltype_of_locals.h"

namespace mfagen::msl {

void lower_decltype(TokenView& v) {
  for (size_t k = 0; k + 2 < v.count(); ++k) {
    if (!v.is(k, "decltype") || !v.is(k + 1, "(") || v.is(k + 2, "auto") || v.in_attribute(k)) continue;
    size_t close = v.find_matching(k + 1);
    if (close >= v.count()) continue;
    // decltype(f<...>) names a function type (llama.cpp's kernel typedefs); leave it.
    if (v.is_identifier(k + 2) && v.is(k + 3, "<") && v.find_matching(k + 3) + 1 == close) continue;
    v.replace(k, "__mf_unprivate_t<decltype");
    v.replace(close, ")> ");
  }
}

}  // namespace mfagen::msl
