// `(T)x` and `T(x)` inside a template whose type parameter T may turn out
// to be a vector (llama.cpp: `(q4_t) q4[i]`, `s2_t(x)` with q4_t = half4,
// `(type4)(*src)` in its dequantizers). Metal converts values element by
// element (MSL specification, section 2.12.1: a vector cast converts each
// component); clang would bit-cast a vector of another size, or reject the
// cast. They become
//   ::metal::__mf_dep_cast<T>{} ->* x      and      ::metal::__mf_dep_ctor<T>(x)
// which decide at instantiation (mfagen_standin/conversions.h): Metal's
// value conversion when T is a vector, the cast or constructor as written
// otherwise.
//
// Both lowerings run this pass, so that what the checker accepts is what the
// cpu backend runs. Templates of the stand-in's own headers are left alone
// (they spell out their conversions and implement these helpers).
#pragma once

#include <functional>
#include <string>

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// A cast the rewrite cannot express (`-(T)x`, cast_context.h): `token` is
// its `(`. The cpu backend fails there; the checker reports a finding.
using UnaryBeforeCastHandler = std::function<void(size_t token, const std::string& message)>;

void lower_dependent_casts(TokenView& v, const UnaryBeforeCastHandler& on_unary_before_cast);

}  // namespace mfagen::msl
