#include "mfagen/msl/coherence_qualifiers.h"

namespace mfagen::msl {

void drop_coherence_qualifiers(TokenView& v) {
  for (size_t k = 0; k + 4 < v.count(); ++k) {
    if (v.in_attribute(k) || !v.is(k, "coherent") || !v.is(k + 1, "(") || !v.is(k + 3, ")")) continue;
    if (!v.is(k + 2, "device") && !v.is(k + 2, "system")) continue;
    // A type follows a qualifier; an identifier never follows a call's `)`.
    if (!v.is_identifier(k + 4)) continue;
    for (size_t j = k; j <= k + 3; ++j) v.replace(j, "");
    k += 3;
  }
}

}  // namespace mfagen::msl
