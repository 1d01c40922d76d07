// Whether `( TYPE )` is a C-style cast, for the passes that rewrite casts to
// a helper applied with `->*` (`(float4)x` -> `__mf_vec_cast<float4>{} ->* x`,
// vector_syntax.h; the cpu backend's dependent casts, msl_dialect.h).
#pragma once

#include <string>

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

enum class CastContext {
  not_a_cast,  // sizeof(T), a parameter list, a call, a declarator
  cast,
  // `-(float4)x`: a cast, but the rewrite would apply the unary operator to
  // the helper object (`->*` binds looser than a unary operator), not to the
  // converted value; the rewrite cannot express it.
  cast_after_unary_operator,
};

// The context of `( TYPE )` opening at token `open`, its operand starting at
// token `operand`.
CastContext cast_context(const TokenView& v, size_t open, size_t operand);

// What to write instead, for a cast_after_unary_operator at `open`.
std::string unary_operator_before_cast_message(const TokenView& v, size_t open);

}  // namespace mfagen::msl
