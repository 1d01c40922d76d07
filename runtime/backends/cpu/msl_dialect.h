// Token rewrites (on the token view shared with the checker,
// mfagen/msl/token_view.h) for valid MSL that C++ for OpenCL (clang-16) types
// differently or rejects, found by compiling MLX's and llama.cpp's kernels
// (docs/verification.md, "Third-party kernels"): decltype of locals (shared
// with the checker, mfagen/msl/decltype_of_locals.h), reinterpret_cast to thread references, function-pointer template
// parameters, short vector brace lists, casts to template vector types and
// class template partial specializations on vec<T, N> (the checker's passes
// too: mfagen/msl/function_pointers.h, short_vector_braces.h,
// dependent_casts.h, vec_partial_specializations.h, vec_alias_templates.h).
// Each pass says why in msl_dialect.cpp; the
// helpers they insert live in mfagen_standin/lowering_support.h and
// conversions.h. What only clang's type checker can see is repaired from its
// diagnostics instead (diagnostic_repair.h).
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::cpu {

void lower_dialect_differences(msl::TokenView& tokens);

}  // namespace mfagen::cpu
