// Metal's vec<T, N> deduces T and N; the stand-in's goes through a trait
// (so that vec<bfloat, N> and vec<bool, N>, which clang cannot make ext
// vectors of, exist) and does not. Alias templates over vec exist to be
// deduced through (MLX: `template <typename U> using dtype_frag_t =
// typename metal::vec<U, 8>;` and `load(thread dtype_frag_t<T>& dst, ...)`,
// with T = half, float, bfloat or bool). No pattern deduces a bfloat struct
// and an ext vector alike, so a function template's parameter
// `NAME<T>` (NAME such an alias, T one of its type parameters) becomes a
// deduced type of its own, `__mf_vec_T_0`, and T follows from it:
//   template <typename T, class S> void load(thread dtype_frag_t<T>& d, S s)
//   -> template <typename __mf_vec_T_0, class S, typename T =
//        ::__mf_vec_lelem_t<__mf_vec_T_0>, ::__mf_if<
//        ::__mf_vec_alias_matches<__mf_vec_T_0, dtype_frag_t, T>()> = 0>
//      void load(thread __mf_vec_T_0& d, S s)
// (each occurrence its own type, so arguments in different address spaces
// still deduce one T). The check keeps the function exactly where Metal's
// deduction succeeds (mfagen_standin/vector_types.h). A T named anywhere else
// in the template parameter list, given a default, or a pack is left as
// written. Both lowerings run it (the checker's since MLX's steel attention
// and NAX headers overload mma, load and store this way); unbalanced
// brackets are left as written (the checker reads files that may not
// parse; the cpu backend's own passes report them).
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// Outside the stand-in's own headers.
void lower_vec_in_alias_templates(TokenView& v);

}  // namespace mfagen::msl
