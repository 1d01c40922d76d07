// A class template partial specialization on `vec<T, N>` (MLX's
// fft/readwrite.h: `template <typename T> struct FFTStorageTraits<vec<T, 2>>
// { using scalar_T = T; };`). Metal's vec<T, N> is a builtin vector type
// whose T and N deduce, so the specialization matches float2, half2, int2,
// bool2, bfloat2, ... with T their element type (MSL specification, section
// 2.2, vector data types: vec<T, n> names the builtin vector types). The
// stand-in's vec goes through a trait, which clang cannot deduce through
// ("this partial specialization will never be used"), and the primary
// template would silently take vector arguments.
//
// Both lowerings run this pass, so that what the checker accepts is what the
// cpu backend runs: with exactly one type parameter T named only in one
// `vec<T, N>` (N a literal) among the arguments, and the body opening right
// after them, the specialization deduces the ext vector's element instead
// and T becomes a member alias of the logical element (bool for bool
// vectors):
//   template <typename __mf_vec_elem_T> struct S<::__mf_ext_vec<__mf_vec_elem_T, 2>> {
//   private: typedef ::__mf_vec_lelem_t<::__mf_ext_vec<__mf_vec_elem_T, 2>> T; public: ...
// A bfloat vector is a struct here, which no ext-vector pattern deduces, and
// a second copy of the body could not be lowered like the first: the
// specialization for it is declared and left undefined, so that using it is
// a compile error in both ("implicit instantiation of undefined template
// S<bfloat2>", noted at the partial specialization) instead of the primary
// template's silently different meaning. Other forms stay as written (and
// stay clang's "partial specialization will never be used" in both).
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// Rewrites every such partial specialization outside the stand-in's own
// headers (mfagen_standin/, named by the cpu backend's line markers).
void lower_vec_partial_specializations(TokenView& v);

}  // namespace mfagen::msl
