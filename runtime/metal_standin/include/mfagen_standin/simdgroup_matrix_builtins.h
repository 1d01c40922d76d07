// Metal stand-in: the 8x8 simdgroup_matrix multiply builtin that code under
// `#pragma METAL internals : enable` calls directly,
//   __metal_simdgroup_matrix_8x8_multiply_accumulate(a, b, c, D())
// on vec<T, 64> values: Apple's compiler represents a simdgroup_matrix as a
// 64-element vector of which each lane holds its own two elements first
// (metal-flash-attention's simdgroup_matrix_storage: `vec<T, 64> t`, its
// thread_elements() the first two). The fourth argument only names the
// result type. metal-flash-attention has multiplied half or bfloat operands
// into float accumulators this way since 2023; Apple does not document the
// builtin.
//
// Semantics: simdgroup_multiply_accumulate's (simdgroup_matrix.h): each
// product exact in float, summed in float over k = 0..7 from C, rounded once
// to D's type; the lane's two results are the first two elements of the
// returned vector, the others are 0. Accepted element types: A and B each
// half, bfloat or float, C and D float or the operands' common type (half x
// half -> float, bfloat x bfloat -> float, and the same-type products);
// anything else is a compile error, as an unknown builtin is.
#pragma once
#include "simdgroup_matrix.h"

template <class TA, class TB, class TC, class TD>
inline constexpr bool __mf_internal_mma_types =
    ::metal::__mf_sgm_elem<TA> && ::metal::__mf_sgm_elem<TB> && ::metal::__mf_sgm_elem<TC> &&
    ::metal::__mf_sgm_elem<TD> && __is_same(TC, TD) &&
    (__is_same(TD, float) || (__is_same(TA, TD) && __is_same(TB, TD)));

// The vectors' element types are read from them (vec<T, 64> is not deducible).
template <class VA, class VB, class VC, class VD>
METAL_FUNC VD __metal_simdgroup_matrix_8x8_multiply_accumulate(VA a, VB b, VC c, VD) {
  typedef typename ::__mf_vt<VA>::elem TA;
  typedef typename ::__mf_vt<VB>::elem TB;
  typedef typename ::__mf_vt<VC>::elem TC;
  typedef typename ::__mf_vt<VD>::elem TD;
  static_assert(::__mf_vt<VA>::n == 64 && ::__mf_vt<VB>::n == 64 && ::__mf_vt<VC>::n == 64 &&
                    ::__mf_vt<VD>::n == 64,
                "__metal_simdgroup_matrix_8x8_multiply_accumulate takes vec<T, 64> matrices");
  static_assert(__mf_internal_mma_types<TA, TB, TC, TD>,
                "__metal_simdgroup_matrix_8x8_multiply_accumulate: the stand-in accepts half, bfloat or float "
                "operands into a float accumulator, or one element type throughout");
  ::metal::simdgroup_matrix<TA, 8, 8> ma;
  ::metal::simdgroup_matrix<TB, 8, 8> mb;
  ::metal::simdgroup_matrix<TC, 8, 8> mc;
  ::metal::simdgroup_matrix<TD, 8, 8> md;
  ma.__mf_elems[0] = a[0], ma.__mf_elems[1] = a[1];
  mb.__mf_elems[0] = b[0], mb.__mf_elems[1] = b[1];
  mc.__mf_elems[0] = c[0], mc.__mf_elems[1] = c[1];
  ::metal::simdgroup_multiply_accumulate(md, ma, mb, mc);
  VD d = 0;
  d[0] = md.__mf_elems[0];
  d[1] = md.__mf_elems[1];
  return d;
}
