// Metal stand-in: metal::uniform<T> (<metal_uniform>), a value the program
// declares the same in every thread, so that Apple's compiler may keep it in
// scalar registers. It changes no result, so here it is a plain wrapper:
// * make_uniform(x) (constexpr) builds one; uniform<T> converts implicitly
//   to T, so a uniform used with a T (`i < in_size`, `x *= float(s)`) is that
//   T's ordinary arithmetic, and the result is a T;
// * an operation between two uniform<T> gives a uniform (of T, or of bool for
//   comparisons and logical operators).
// MLX: `const metal::uniform<float> scale2 = make_uniform(params->scale) *
// make_uniform(1.44269504089f);` (steel_attention_nax.h),
// `constexpr const uniform<int> loop_stride = make_uniform(blockN);` (gemv.h).
#pragma once
#include "type_traits.h"

namespace metal {

template <class T>
struct uniform {
  T __value;

  METAL_FUNC constexpr operator T() const { return __value; }

#define __MF_UNIFORM_BINOP(OP, R)                                                 \
  friend METAL_FUNC constexpr uniform<R> operator OP(uniform a, uniform b) {     \
    return uniform<R>{static_cast<R>(a.__value OP b.__value)};                    \
  }
  __MF_UNIFORM_BINOP(+, T)
  __MF_UNIFORM_BINOP(-, T)
  __MF_UNIFORM_BINOP(*, T)
  __MF_UNIFORM_BINOP(/, T)
  __MF_UNIFORM_BINOP(%, T)  // integer operators: instantiated only where used
  __MF_UNIFORM_BINOP(&, T)
  __MF_UNIFORM_BINOP(|, T)
  __MF_UNIFORM_BINOP(^, T)
  __MF_UNIFORM_BINOP(<<, T)
  __MF_UNIFORM_BINOP(>>, T)
  __MF_UNIFORM_BINOP(&&, bool)
  __MF_UNIFORM_BINOP(||, bool)
  __MF_UNIFORM_BINOP(==, bool)
  __MF_UNIFORM_BINOP(!=, bool)
  __MF_UNIFORM_BINOP(<, bool)
  __MF_UNIFORM_BINOP(>, bool)
  __MF_UNIFORM_BINOP(<=, bool)
  __MF_UNIFORM_BINOP(>=, bool)
#undef __MF_UNIFORM_BINOP
  friend METAL_FUNC constexpr uniform operator-(uniform a) { return uniform{static_cast<T>(-a.__value)}; }
  friend METAL_FUNC constexpr uniform<bool> operator!(uniform a) { return uniform<bool>{!a.__value}; }
};

template <class T>
METAL_FUNC constexpr uniform<__mf_unqual<T>> make_uniform(T x) {
  return uniform<__mf_unqual<T>>{x};
}

}  // namespace metal
