// Metal's vector constructors and casts convert values element by element;
// clang's vector casts reinterpret bits and its vector types have no
// constructors. Both lowerings therefore route them through the stand-in's
// value-converting helpers (mfagen_standin/conversions.h):
//   float4(...)            -> ::metal::__mf_vec_ctor<float4>(...)
//   metal::float4(...)     -> metal::__mf_vec_ctor<::metal::float4>(...)
//   (float4)x              -> ::metal::__mf_vec_cast<float4>{} ->* x
//   vec<float, 4>(...)     -> ::metal::__mf_vec_ctor<::metal::vec<float, 4>>(...)
//   (vec<float, 4>)x       -> ::metal::__mf_vec_cast<::metal::vec<float, 4>>{} ->* x
//   complex_T(...), (complex_T)x, where `using complex_T = vec<T, 2>;` (or
//   `= float2;`, or a typedef) is in scope
//                          -> ::metal::__mf_vec_ctor<complex_T>(...), ::metal::__mf_vec_cast<complex_T>{} ->* x
// Attributes and member names (`.float4(`, `operator float4(`) stay.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// float2..float4, half2.., bfloat2.., int2.., ..., bool4.
bool is_vector_type_name(std::string_view name);
// bool, char .. ulong, half, float, bfloat, the <cstdint> names, size_t,
// unsigned, signed.
bool is_scalar_type_name(std::string_view name);

// Vector syntax the rewrite leaves as written. Each lowering decides what
// that means: an error for the cpu backend (the text would not run as Metal
// means it), a finding or nothing for the checker (clang parses the text
// as written).
enum class VectorSyntaxProblem {
  unbalanced_template_arguments,  // `vec <` with no closing `>`
  qualified_constructor,          // `ns::float4(x)`: the helpers take the builtin vector types only
  unary_operator_before_cast,     // `-(float4)x` (cast_context.h)
};
using VectorSyntaxProblemHandler =
    std::function<void(VectorSyntaxProblem problem, size_t token, const std::string& message)>;

void lower_vector_syntax(TokenView& v, const VectorSyntaxProblemHandler& on_problem);

}  // namespace mfagen::msl
