// Words that are keywords in C++ for OpenCL (the dialect both lowerings
// compile MSL as) but ordinary identifiers in MSL: `int local = 1;` is valid
// Metal. Every use outside attributes is renamed __mf_id_WORD, the
// declaration and its uses alike (member accesses included), so the program
// means the same.
#pragma once

#include <string_view>

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

bool is_opencl_only_keyword(std::string_view word);

// Renames the OpenCL-only keywords no pass has rewritten yet.
void rename_opencl_only_keywords(TokenView& v);

}  // namespace mfagen::msl
