// Metal stand-in: vector constructors, vector casts and as_type.
//
// The lowering rewrites
//   V(args...)  ->  ::metal::__mf_vec_ctor<V>(args...)
//   (V)expr     ->  ::metal::__mf_vec_cast<V>{} ->* expr
// for V a vector type name (bool|char|uchar|short|ushort|int|uint|long|ulong|
// half|float|bfloat followed by 2|3|4). Both convert VALUES element by element
// (Metal semantics), never bits; as_type<T>(x) is the bit cast.
#pragma once
#include "numeric_limits.h"

namespace metal {

// Logical scalar value of type S -> logical element type D.
template <class D, class S0>
METAL_FUNC constexpr D __mf_cvt(S0 x) {
  typedef ::__mf_unqual<S0> S;
  if constexpr (__is_same(D, bool)) {
    if constexpr (__is_same(S, bfloat))
      return ::__mf_bf(x) != 0.0f;
    else
      return x != 0;
  } else if constexpr (__is_same(D, bfloat)) {
    if constexpr (__is_same(S, bfloat))
      return x;
    else if constexpr (__is_floating_point(S) && !__is_same(S, float) && !__is_same(S, half))
      return bfloat(static_cast<float>(x));  // unsuffixed literals are 64-bit: via float
    else
      return bfloat(x);
  } else if constexpr (__is_same(S, bfloat)) {
    return static_cast<D>(::__mf_bf(x));
  } else {
    return static_cast<D>(x);
  }
}

// Element k of a vector as its logical value (boolN -> bool).
template <class A>
METAL_FUNC typename ::__mf_vt<A>::lelem __mf_vget(const A& a, int k) {
  if constexpr (::__mf_vt<A>::is_bool_vec)
    return a[k] != 0;
  else
    return a[k];
}
// Store logical value x (already of V's logical element type) at index k.
template <class V>
METAL_FUNC void __mf_vset(V& r, int k, typename ::__mf_vt<V>::lelem x) {
  if constexpr (::__mf_vt<V>::is_bool_vec)
    r[k] = x ? 1 : 0;
  else
    r[k] = x;
}

// Scalars: bool, integers, half, float, bfloat, and 64-bit floating literals
// such as the 1.5 in float4(v, 1.5, 0) (converted like any other scalar).
template <class S0, class S = ::__mf_unqual<S0>>
inline constexpr bool __mf_is_scalar_arg = __is_arithmetic(S) || __is_same(S, half) || __is_same(S, bfloat);

template <class V, class A>
METAL_FUNC void __mf_vec_put(V& r, int& i, const A& a) {
  typedef typename ::__mf_vt<V>::lelem E;
  if constexpr (::__mf_vt<A>::is_vec) {
    for (int k = 0; k < ::__mf_vt<A>::n; ++k) __mf_vset(r, i++, __mf_cvt<E>(__mf_vget(a, k)));
  } else {
    static_assert(
        __mf_is_scalar_arg<A>,
        "Metal vector constructor: arguments must be scalars (bool, integers, half, float, bfloat) or vectors");
    __mf_vset(r, i++, __mf_cvt<E>(a));
  }
}

template <class V, class... Args>
METAL_FUNC V __mf_vec_ctor(Args... args) {
  static_assert(::__mf_vt<V>::is_vec, "__mf_vec_ctor<V>: V is not a vector type");
  constexpr int N = ::__mf_vt<V>::n;
  V r = {};
  if constexpr (sizeof...(Args) == 1 && !(::__mf_vt<Args>::is_vec && ...)) {
    // One scalar: splat (value conversion).
    static_assert(
        (__mf_is_scalar_arg<Args> && ...),
        "Metal vector constructor: arguments must be scalars (bool, integers, half, float, bfloat) or vectors");
    typename ::__mf_vt<V>::lelem x = __mf_cvt<typename ::__mf_vt<V>::lelem>(args...);
    for (int k = 0; k < N; ++k) __mf_vset(r, k, x);
  } else if constexpr (sizeof...(Args) > 0) {
    static_assert((0 + ... + ::__mf_vt<Args>::n) == N,
                  "Metal vector constructor: the arguments must supply exactly as many components as the vector has "
                  "(one scalar splats; a vector of another length does not convert — use a swizzle such as .xy)");
    int i = 0;
    (__mf_vec_put(r, i, args), ...);
  }
  return r;
}

// (V)expr: value conversion of a scalar (splat) or of a vector with the same
// number of components.
template <class V>
struct __mf_vec_cast {};
template <class... Vs>
struct __mf_vec_cast_chain {};  // (V1)(V2)...(Vn)expr: applies Vn first

template <class X>
struct __mf_is_cast_tag {
  static constexpr bool value = false;
};
template <class V>
struct __mf_is_cast_tag<__mf_vec_cast<V>> {
  static constexpr bool value = true;
};
template <class... Vs>
struct __mf_is_cast_tag<__mf_vec_cast_chain<Vs...>> {
  static constexpr bool value = true;
};

template <class V, class X>
METAL_FUNC V __mf_vec_cast_apply(X x) {
  static_assert(::__mf_vt<V>::is_vec, "vector cast: target is not a vector type");
  static_assert(!::__mf_vt<X>::is_vec || ::__mf_vt<X>::n == ::__mf_vt<V>::n,
                "Metal vector cast: source and target vectors must have the same number of components");
  return __mf_vec_ctor<V>(x);
}
template <class V1, class... Vs, class X>
METAL_FUNC auto __mf_vec_chain_apply(X x) {
  if constexpr (sizeof...(Vs) == 0)
    return __mf_vec_cast_apply<V1>(x);
  else
    return __mf_vec_cast_apply<V1>(__mf_vec_chain_apply<Vs...>(x));
}

template <class V, class X, ::__mf_if<!__mf_is_cast_tag<X>::value> = 0>
METAL_FUNC V operator->*(__mf_vec_cast<V>, X x) {
  return __mf_vec_cast_apply<V>(x);
}
template <class V, class W>
METAL_FUNC __mf_vec_cast_chain<V, W> operator->*(__mf_vec_cast<V>, __mf_vec_cast<W>) {
  return {};
}
template <class... Vs, class W>
METAL_FUNC __mf_vec_cast_chain<Vs..., W> operator->*(__mf_vec_cast_chain<Vs...>, __mf_vec_cast<W>) {
  return {};
}
template <class... Vs, class X, ::__mf_if<!__mf_is_cast_tag<X>::value> = 0>
METAL_FUNC auto operator->*(__mf_vec_cast_chain<Vs...>, X x) {
  return __mf_vec_chain_apply<Vs...>(x);
}

// (T)x where T is a template type parameter (the lowering cannot tell whether
// it names a vector): a value conversion when T is a vector, as for (float4)x,
// and C's cast otherwise. A cast of a cast of a dependent type, (T)(U)x, is
// a compile error here rather than a wrong result.
template <class T>
struct __mf_dep_cast {};
template <class T>
struct __mf_is_cast_tag<__mf_dep_cast<T>> {
  static constexpr bool value = true;
};
template <class T, class X, ::__mf_if<!__mf_is_cast_tag<X>::value> = 0>
METAL_FUNC constexpr auto operator->*(__mf_dep_cast<T>, X x) {
  static_assert(!__is_reference(T), "the cpu backend does not support a C-style cast to a template reference type");
  if constexpr (::__mf_vt<T>::is_vec)
    return __mf_vec_cast_apply<::__mf_unqual<T>>(x);
  else
    return (T)x;
}
// T(args...) for the same T: Metal's vector constructor when T is a vector.
// Scalars, vectors and bfloat take their arguments by value, so that a
// vector element converts (`AccumType(frag[j])`, MLX's steel_attention_nax.h:
// no reference binds to a vector element); classes get them forwarded.
// constexpr, as the construction it stands for is: `static constexpr
// constant U init = U(0);` (MLX's reduction/ops.h) is a constant expression.
template <class T>
inline constexpr bool __mf_dep_ctor_by_value =
    __is_scalar(::__mf_unqual<T>) || ::__mf_vt<T>::is_vec || __is_same(::__mf_unqual<T>, bfloat);
template <class T, class... A, ::__mf_if<__mf_dep_ctor_by_value<T>> = 0>
METAL_FUNC constexpr auto __mf_dep_ctor(A... args) {
  if constexpr (::__mf_vt<T>::is_vec)
    return __mf_vec_ctor<::__mf_unqual<T>>(args...);
  else
    return T(args...);
}
template <class T, class... A, ::__mf_if<!__mf_dep_ctor_by_value<T>> = 0>
METAL_FUNC constexpr auto __mf_dep_ctor(A&&... args) {
  return T(static_cast<A&&>(args)...);
}

// Bit reinterpretation; sizes must match.
template <class T, class U>
METAL_FUNC constexpr T as_type(U x) {
  static_assert(sizeof(T) == sizeof(U), "as_type<T>(x): T and the type of x must have the same size");
  return __builtin_bit_cast(T, x);
}

}  // namespace metal
