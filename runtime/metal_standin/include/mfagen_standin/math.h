// Metal stand-in: <metal_math>, <metal_common>, <metal_geometric>,
// <metal_relational> and <metal_integer> subset.
//
// * metal::  — float and half scalars/vectors, integer functions.
// * metal::fast:: and metal::precise:: — the float (scalar and vector)
//   overloads only, as in Metal (a half argument converts to float there).
//   On the CPU fast and precise are the same implementation (libm via
//   __builtin_*f, correctly rounded where libm is).
// * half functions compute in float and round to half once.
// * bfloat: like Metal, no bfloat overloads exist; a bfloat argument converts
//   implicitly to float and the result is float.
// * Scalar overloads are non-templates (so that mixed arguments resolve or are
//   ambiguous as in Metal); vector overloads are templates taking the vector
//   type plus, for multi-argument functions, scalars of any arithmetic type
//   that are splatted (max(v, 0.0f), clamp(v, 0.0f, 1.0f), mix(a, b, t)).
// * Vectors of comparisons / isnan & co return boolN (1 = true); all(), any(),
//   select() accept boolN and the -1/0 mask vectors of vector comparisons.
#pragma once
#include "conversions.h"

#define M_E_F 2.71828182845904523536028747135266250f
#define M_LOG2E_F 1.44269504088896340735992468100189214f
#define M_LOG10E_F 0.434294481903251827651128918916605082f
#define M_LN2_F 0.693147180559945309417232121458176568f
#define M_LN10_F 2.30258509299404568401799145468436421f
#define M_PI_F 3.14159265358979323846264338327950288f
#define M_PI_2_F 1.57079632679489661923132169163975144f
#define M_PI_4_F 0.785398163397448309615660845819875721f
#define M_1_PI_F 0.318309886183790671537767526745028724f
#define M_2_PI_F 0.636619772367581343075535053490057448f
#define M_2_SQRTPI_F 1.12837916709551257389615890312154517f
#define M_SQRT2_F 1.41421356237309504880168872420969808f
#define M_SQRT1_2_F 0.707106781186547524400844362104849039f
#define M_E_H (static_cast<half>(M_E_F))
#define M_LOG2E_H (static_cast<half>(M_LOG2E_F))
#define M_LOG10E_H (static_cast<half>(M_LOG10E_F))
#define M_LN2_H (static_cast<half>(M_LN2_F))
#define M_LN10_H (static_cast<half>(M_LN10_F))
#define M_PI_H (static_cast<half>(M_PI_F))
#define M_PI_2_H (static_cast<half>(M_PI_2_F))
#define M_PI_4_H (static_cast<half>(M_PI_4_F))
#define M_1_PI_H (static_cast<half>(M_1_PI_F))
#define M_2_PI_H (static_cast<half>(M_2_PI_F))
#define M_2_SQRTPI_H (static_cast<half>(M_2_SQRTPI_F))
#define M_SQRT2_H (static_cast<half>(M_SQRT2_F))
#define M_SQRT1_2_H (static_cast<half>(M_SQRT1_2_F))

// ---- element-wise helpers ---------------------------------------------------
template <class V>
inline constexpr bool __mf_is_fvec = __mf_vt<V>::is_vec&& __is_same(typename __mf_vt<V>::elem, float);
template <class V>
inline constexpr bool __mf_is_hvec = __mf_vt<V>::is_vec&& __is_same(typename __mf_vt<V>::elem, half);
template <class V>
inline constexpr bool __mf_is_ivec =
    __mf_vt<V>::is_vec&& __mf_is_int<typename __mf_vt<V>::elem> && !__mf_vt<V>::is_bool_vec;
template <class S>
inline constexpr bool __mf_is_arith = __is_arithmetic(__mf_unqual<S>) || __is_same(__mf_unqual<S>, half);

// Operand of a multi-argument vector function next to vector type V: V itself
// or an arithmetic scalar (splatted after conversion to V's element type).
template <class V, class S>
inline constexpr bool __mf_vec_operand = __is_same(__mf_unqual<S>, __mf_unqual<V>) || __mf_is_arith<S>;
template <class V, class S>
METAL_FUNC typename __mf_vt<V>::elem __mf_at(S s, int i) {
  if constexpr (__mf_vt<S>::is_vec)
    return s[i];
  else
    return static_cast<typename __mf_vt<V>::elem>(s);
}
// The vector type among A, B, C (the first one that is a vector).
template <class A, class B, class C = float>
using __mf_vec_of = __mf_unqual<__mf_cond<__mf_vt<A>::is_vec, A, __mf_cond<__mf_vt<B>::is_vec, B, C>>>;

template <class N>
using __mf_boolv = __mf_ext_vec<signed char, __mf_vt<N>::n>;

// Defines vector overloads of unary function NAME for vectors V satisfying PRED.
#define __MF_VEC_UNARY(NAME, PRED)                             \
  template <class V, __mf_if<PRED<V>> = 0>                     \
  METAL_FUNC V NAME(V v) {                                     \
    V r = {};                                                  \
    for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = NAME(v[i]); \
    return r;                                                  \
  }
#define __MF_VEC_PRED(NAME, PRED)                                      \
  template <class V, __mf_if<PRED<V>> = 0>                             \
  METAL_FUNC __mf_boolv<V> NAME(V v) {                                 \
    __mf_boolv<V> r = {};                                              \
    for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = NAME(v[i]) ? 1 : 0; \
    return r;                                                          \
  }
#define __MF_VEC_BINARY(NAME, PRED)                                                          \
  template <class A, class B, class V = __mf_vec_of<A, B>,                                   \
            __mf_if<PRED<V> && __mf_vec_operand<V, A> && __mf_vec_operand<V, B>> = 0>        \
  METAL_FUNC V NAME(A a, B b) {                                                              \
    V r = {};                                                                                \
    for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = NAME(__mf_at<V>(a, i), __mf_at<V>(b, i)); \
    return r;                                                                                \
  }
#define __MF_VEC_TERNARY(NAME, PRED)                                                                            \
  template <class A, class B, class C, class V = __mf_vec_of<A, B, C>,                                          \
            __mf_if<PRED<V> && __mf_vec_operand<V, A> && __mf_vec_operand<V, B> && __mf_vec_operand<V, C>> = 0> \
  METAL_FUNC V NAME(A a, B b, C c) {                                                                            \
    V r = {};                                                                                                   \
    for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = NAME(__mf_at<V>(a, i), __mf_at<V>(b, i), __mf_at<V>(c, i));  \
    return r;                                                                                                   \
  }

// ---- float ------------------------------------------------------------------
namespace __mf_fm {
#define __MF_F1(NAME, EXPR) \
  METAL_FUNC float NAME(float x) { return EXPR; }
#define __MF_F2(NAME, EXPR) \
  METAL_FUNC float NAME(float x, float y) { return EXPR; }
#define __MF_F3(NAME, EXPR) \
  METAL_FUNC float NAME(float x, float y, float z) { return EXPR; }
__MF_F1(abs, __builtin_fabsf(x))
__MF_F1(fabs, __builtin_fabsf(x))
__MF_F1(exp, __builtin_expf(x))
__MF_F1(exp2, __builtin_exp2f(x))
__MF_F1(exp10, __builtin_powf(10.0f, x))
__MF_F1(log, __builtin_logf(x))
__MF_F1(log2, __builtin_log2f(x))
__MF_F1(log10, __builtin_log10f(x))
__MF_F1(sqrt, __builtin_sqrtf(x))
__MF_F1(rsqrt, 1.0f / __builtin_sqrtf(x))
__MF_F1(cbrt, __builtin_cbrtf(x))
__MF_F1(sin, __builtin_sinf(x))
__MF_F1(cos, __builtin_cosf(x))
__MF_F1(tan, __builtin_tanf(x))
__MF_F1(asin, __builtin_asinf(x))
__MF_F1(acos, __builtin_acosf(x))
__MF_F1(atan, __builtin_atanf(x))
__MF_F1(sinh, __builtin_sinhf(x))
__MF_F1(cosh, __builtin_coshf(x))
__MF_F1(tanh, __builtin_tanhf(x))
__MF_F1(asinh, __builtin_asinhf(x))
__MF_F1(acosh, __builtin_acoshf(x))
__MF_F1(atanh, __builtin_atanhf(x))
__MF_F1(sinpi, __builtin_sinf(M_PI_F* x))
__MF_F1(cospi, __builtin_cosf(M_PI_F* x))
__MF_F1(tanpi, __builtin_tanf(M_PI_F* x))
__MF_F1(floor, __builtin_floorf(x))
__MF_F1(ceil, __builtin_ceilf(x))
__MF_F1(round, __builtin_roundf(x))
__MF_F1(rint, __builtin_rintf(x))
__MF_F1(trunc, __builtin_truncf(x))
__MF_F1(fract, __builtin_isnan(x) ? x : __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f))
__MF_F1(sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? x : 0.0f)
__MF_F1(saturate, !(x > 0.0f) ? 0.0f : (x < 1.0f ? x : 1.0f))  // NaN and -0 give +0
__MF_F2(min, __builtin_fminf(x, y))
__MF_F2(max, __builtin_fmaxf(x, y))
__MF_F2(fmin, __builtin_fminf(x, y))
__MF_F2(fmax, __builtin_fmaxf(x, y))
__MF_F2(pow, __builtin_powf(x, y))
__MF_F2(powr, __builtin_powf(x, y))
__MF_F2(atan2, __builtin_atan2f(x, y))
__MF_F2(fmod, __builtin_fmodf(x, y))
__MF_F2(copysign, __builtin_copysignf(x, y))
__MF_F2(fdim, __builtin_fdimf(x, y))
__MF_F2(nextafter, __builtin_nextafterf(x, y))
__MF_F2(divide, x / y)
__MF_F2(step, y < x ? 0.0f : 1.0f)  // step(edge, x)
__MF_F3(clamp, __builtin_fminf(__builtin_fmaxf(x, y), z))
__MF_F3(mix, x + (y - x) * z)
__MF_F3(fma, __builtin_fmaf(x, y, z))
__MF_F3(fmin3, __builtin_fminf(__builtin_fminf(x, y), z))
__MF_F3(fmax3, __builtin_fmaxf(__builtin_fmaxf(x, y), z))
__MF_F3(min3, __builtin_fminf(__builtin_fminf(x, y), z))
__MF_F3(max3, __builtin_fmaxf(__builtin_fmaxf(x, y), z))
__MF_F3(fmedian3, __builtin_fmaxf(__builtin_fminf(x, y), __builtin_fminf(__builtin_fmaxf(x, y), z)))
__MF_F3(median3, __builtin_fmaxf(__builtin_fminf(x, y), __builtin_fminf(__builtin_fmaxf(x, y), z)))
METAL_FUNC float smoothstep(float e0, float e1, float x) {
  float t = __builtin_fminf(__builtin_fmaxf((x - e0) / (e1 - e0), 0.0f), 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
METAL_FUNC bool isinf(float x) { return __builtin_isinf(x); }
METAL_FUNC bool isnan(float x) { return __builtin_isnan(x); }
METAL_FUNC bool isfinite(float x) { return __builtin_isfinite(x); }
METAL_FUNC bool isnormal(float x) { return __builtin_isnormal(x); }
METAL_FUNC bool signbit(float x) { return __builtin_signbit(x); }
METAL_FUNC float ldexp(float x, int k) { return __builtin_ldexpf(x, k); }
METAL_FUNC float frexp(float x, int& e) {
  int t = 0;
  float r = __builtin_frexpf(x, &t);
  e = t;
  return r;
}
METAL_FUNC float modf(float x, float& ip) {
  float t = __builtin_truncf(x);
  ip = t;
  return __builtin_isinf(x) ? __builtin_copysignf(0.0f, x) : x - t;
}
METAL_FUNC float sincos(float x, float& c) {
  c = __builtin_cosf(x);
  return __builtin_sinf(x);
}
#undef __MF_F1
#undef __MF_F2
#undef __MF_F3

#define __MF_FV1(NAME) __MF_VEC_UNARY(NAME, __mf_is_fvec)
#define __MF_FV2(NAME) __MF_VEC_BINARY(NAME, __mf_is_fvec)
#define __MF_FV3(NAME) __MF_VEC_TERNARY(NAME, __mf_is_fvec)
__MF_FV1(abs)
__MF_FV1(fabs) __MF_FV1(exp) __MF_FV1(exp2) __MF_FV1(exp10) __MF_FV1(log) __MF_FV1(log2) __MF_FV1(log10) __MF_FV1(sqrt)
    __MF_FV1(rsqrt) __MF_FV1(cbrt) __MF_FV1(sin) __MF_FV1(cos) __MF_FV1(tan) __MF_FV1(asin) __MF_FV1(acos)
        __MF_FV1(atan) __MF_FV1(sinh) __MF_FV1(cosh) __MF_FV1(tanh) __MF_FV1(asinh) __MF_FV1(acosh) __MF_FV1(atanh)
            __MF_FV1(sinpi) __MF_FV1(cospi) __MF_FV1(tanpi) __MF_FV1(floor) __MF_FV1(ceil) __MF_FV1(round)
                __MF_FV1(rint) __MF_FV1(trunc) __MF_FV1(fract) __MF_FV1(sign) __MF_FV1(saturate) __MF_FV2(min)
                    __MF_FV2(max) __MF_FV2(fmin) __MF_FV2(fmax) __MF_FV2(pow) __MF_FV2(powr) __MF_FV2(atan2)
                        __MF_FV2(fmod) __MF_FV2(copysign) __MF_FV2(fdim) __MF_FV2(nextafter) __MF_FV2(divide)
                            __MF_FV2(step) __MF_FV3(clamp) __MF_FV3(mix) __MF_FV3(fma) __MF_FV3(fmin3) __MF_FV3(fmax3)
                                __MF_FV3(min3) __MF_FV3(max3) __MF_FV3(fmedian3) __MF_FV3(median3) __MF_FV3(smoothstep)
                                    __MF_VEC_PRED(isinf, __mf_is_fvec) __MF_VEC_PRED(isnan, __mf_is_fvec)
                                        __MF_VEC_PRED(isfinite, __mf_is_fvec) __MF_VEC_PRED(isnormal, __mf_is_fvec)
                                            __MF_VEC_PRED(signbit, __mf_is_fvec)
#undef __MF_FV1
#undef __MF_FV2
#undef __MF_FV3

    // Geometric (float vectors), accumulated in float in component order.
    template <class V, __mf_if<__mf_is_fvec<V>> = 0>
    METAL_FUNC float dot(V a, V b) {
  float r = a[0] * b[0];
  for (int i = 1; i < __mf_vt<V>::n; ++i) r = __builtin_fmaf(a[i], b[i], r);
  return r;
}
template <class V, __mf_if<__mf_is_fvec<V>> = 0>
METAL_FUNC float length_squared(V a) {
  return dot(a, a);
}
template <class V, __mf_if<__mf_is_fvec<V>> = 0>
METAL_FUNC float length(V a) {
  return __builtin_sqrtf(dot(a, a));
}
template <class V, __mf_if<__mf_is_fvec<V>> = 0>
METAL_FUNC float distance(V a, V b) {
  return length(a - b);
}
template <class V, __mf_if<__mf_is_fvec<V>> = 0>
METAL_FUNC float distance_squared(V a, V b) {
  return dot(a - b, a - b);
}
template <class V, __mf_if<__mf_is_fvec<V>> = 0>
METAL_FUNC V normalize(V a) {
  return a / __builtin_sqrtf(dot(a, a));
}
METAL_FUNC float3 cross(float3 a, float3 b) {
  float3 r = {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
  return r;
}
}  // namespace __mf_fm

#define __MF_USING_FLOAT_MATH        \
  using ::__mf_fm::abs;              \
  using ::__mf_fm::fabs;             \
  using ::__mf_fm::exp;              \
  using ::__mf_fm::exp2;             \
  using ::__mf_fm::exp10;            \
  using ::__mf_fm::log;              \
  using ::__mf_fm::log2;             \
  using ::__mf_fm::log10;            \
  using ::__mf_fm::sqrt;             \
  using ::__mf_fm::rsqrt;            \
  using ::__mf_fm::cbrt;             \
  using ::__mf_fm::sin;              \
  using ::__mf_fm::cos;              \
  using ::__mf_fm::tan;              \
  using ::__mf_fm::asin;             \
  using ::__mf_fm::acos;             \
  using ::__mf_fm::atan;             \
  using ::__mf_fm::sinh;             \
  using ::__mf_fm::cosh;             \
  using ::__mf_fm::tanh;             \
  using ::__mf_fm::asinh;            \
  using ::__mf_fm::acosh;            \
  using ::__mf_fm::atanh;            \
  using ::__mf_fm::sinpi;            \
  using ::__mf_fm::cospi;            \
  using ::__mf_fm::tanpi;            \
  using ::__mf_fm::floor;            \
  using ::__mf_fm::ceil;             \
  using ::__mf_fm::round;            \
  using ::__mf_fm::rint;             \
  using ::__mf_fm::trunc;            \
  using ::__mf_fm::fract;            \
  using ::__mf_fm::sign;             \
  using ::__mf_fm::saturate;         \
  using ::__mf_fm::min;              \
  using ::__mf_fm::max;              \
  using ::__mf_fm::fmin;             \
  using ::__mf_fm::fmax;             \
  using ::__mf_fm::pow;              \
  using ::__mf_fm::powr;             \
  using ::__mf_fm::atan2;            \
  using ::__mf_fm::fmod;             \
  using ::__mf_fm::copysign;         \
  using ::__mf_fm::fdim;             \
  using ::__mf_fm::nextafter;        \
  using ::__mf_fm::divide;           \
  using ::__mf_fm::step;             \
  using ::__mf_fm::clamp;            \
  using ::__mf_fm::mix;              \
  using ::__mf_fm::fma;              \
  using ::__mf_fm::fmin3;            \
  using ::__mf_fm::fmax3;            \
  using ::__mf_fm::min3;             \
  using ::__mf_fm::max3;             \
  using ::__mf_fm::fmedian3;         \
  using ::__mf_fm::median3;          \
  using ::__mf_fm::smoothstep;       \
  using ::__mf_fm::isinf;            \
  using ::__mf_fm::isnan;            \
  using ::__mf_fm::isfinite;         \
  using ::__mf_fm::isnormal;         \
  using ::__mf_fm::signbit;          \
  using ::__mf_fm::ldexp;            \
  using ::__mf_fm::frexp;            \
  using ::__mf_fm::modf;             \
  using ::__mf_fm::sincos;           \
  using ::__mf_fm::dot;              \
  using ::__mf_fm::length;           \
  using ::__mf_fm::length_squared;   \
  using ::__mf_fm::distance;         \
  using ::__mf_fm::distance_squared; \
  using ::__mf_fm::normalize;        \
  using ::__mf_fm::cross;

namespace metal {
__MF_USING_FLOAT_MATH
namespace fast {
__MF_USING_FLOAT_MATH
}
namespace precise {
__MF_USING_FLOAT_MATH
}

// ---- half (computed in float, rounded once) --------------------------------
#define __MF_H1(NAME) \
  METAL_FUNC half NAME(half x) { return static_cast<half>(::__mf_fm::NAME(static_cast<float>(x))); }
#define __MF_H2(NAME)                                                                        \
  METAL_FUNC half NAME(half x, half y) {                                                     \
    return static_cast<half>(::__mf_fm::NAME(static_cast<float>(x), static_cast<float>(y))); \
  }
#define __MF_H3(NAME)                                                                                               \
  METAL_FUNC half NAME(half x, half y, half z) {                                                                    \
    return static_cast<half>(::__mf_fm::NAME(static_cast<float>(x), static_cast<float>(y), static_cast<float>(z))); \
  }
#define __MF_HP(NAME) \
  METAL_FUNC bool NAME(half x) { return ::__mf_fm::NAME(static_cast<float>(x)); }
__MF_H1(abs)
__MF_H1(fabs) __MF_H1(exp) __MF_H1(exp2) __MF_H1(exp10) __MF_H1(log) __MF_H1(log2) __MF_H1(log10) __MF_H1(sqrt)
    __MF_H1(rsqrt) __MF_H1(cbrt) __MF_H1(sin) __MF_H1(cos) __MF_H1(tan) __MF_H1(asin) __MF_H1(acos) __MF_H1(atan)
        __MF_H1(sinh) __MF_H1(cosh) __MF_H1(tanh) __MF_H1(asinh) __MF_H1(acosh) __MF_H1(atanh) __MF_H1(sinpi)
            __MF_H1(cospi) __MF_H1(tanpi) __MF_H1(floor) __MF_H1(ceil) __MF_H1(round) __MF_H1(rint) __MF_H1(trunc)
                __MF_H1(sign) __MF_H1(saturate) __MF_H2(min) __MF_H2(max) __MF_H2(fmin) __MF_H2(fmax) __MF_H2(pow)
                    __MF_H2(powr) __MF_H2(atan2) __MF_H2(fmod) __MF_H2(copysign) __MF_H2(fdim) __MF_H2(divide)
                        __MF_H2(step) __MF_H3(clamp) __MF_H3(mix) __MF_H3(fma) __MF_H3(fmin3) __MF_H3(fmax3)
                            __MF_H3(min3) __MF_H3(max3) __MF_H3(fmedian3) __MF_H3(median3) __MF_H3(smoothstep)
                                __MF_HP(isinf) __MF_HP(isnan) __MF_HP(isfinite) __MF_HP(signbit)
#undef __MF_H1
#undef __MF_H2
#undef __MF_H3
#undef __MF_HP
                                    METAL_FUNC half fract(half x) {
  // Largest half below 1 (0x1.ffcp-1), not the float bound.
  float f = static_cast<float>(x);
  return __builtin_isnan(f) ? x : static_cast<half>(__builtin_fminf(f - __builtin_floorf(f), 0x1.ffcp-1f));
}
METAL_FUNC bool isnormal(half x) {
  float a = __builtin_fabsf(static_cast<float>(x));
  return a >= 0x1p-14f && a <= 0x1.ffcp+15f;
}
METAL_FUNC half nextafter(half x, half y) {
  if (x != x || y != y) return x + y;
  if (x == y) return y;
  ushort b = __builtin_bit_cast(ushort, x);
  if ((b & 0x7fff) == 0)
    return __builtin_bit_cast(half, static_cast<ushort>((__builtin_bit_cast(ushort, y) & 0x8000) | 1));
  bool up = (x < y) == !(b & 0x8000);
  return __builtin_bit_cast(half, static_cast<ushort>(up ? b + 1 : b - 1));
}
METAL_FUNC half ldexp(half x, int k) { return static_cast<half>(__builtin_ldexpf(static_cast<float>(x), k)); }
METAL_FUNC half frexp(half x, int& e) { return static_cast<half>(::__mf_fm::frexp(static_cast<float>(x), e)); }
METAL_FUNC half modf(half x, half& ip) {
  float t = 0.0f;
  float r = ::__mf_fm::modf(static_cast<float>(x), t);
  ip = static_cast<half>(t);
  return static_cast<half>(r);
}
METAL_FUNC half sincos(half x, half& c) {
  c = static_cast<half>(__builtin_cosf(static_cast<float>(x)));
  return static_cast<half>(__builtin_sinf(static_cast<float>(x)));
}

#define __MF_HV1(NAME) __MF_VEC_UNARY(NAME, __mf_is_hvec)
#define __MF_HV2(NAME) __MF_VEC_BINARY(NAME, __mf_is_hvec)
#define __MF_HV3(NAME) __MF_VEC_TERNARY(NAME, __mf_is_hvec)
__MF_HV1(abs)
__MF_HV1(fabs) __MF_HV1(exp) __MF_HV1(exp2) __MF_HV1(exp10) __MF_HV1(log) __MF_HV1(log2) __MF_HV1(log10) __MF_HV1(sqrt)
    __MF_HV1(rsqrt) __MF_HV1(cbrt) __MF_HV1(sin) __MF_HV1(cos) __MF_HV1(tan) __MF_HV1(asin) __MF_HV1(acos)
        __MF_HV1(atan) __MF_HV1(sinh) __MF_HV1(cosh) __MF_HV1(tanh) __MF_HV1(asinh) __MF_HV1(acosh) __MF_HV1(atanh)
            __MF_HV1(sinpi) __MF_HV1(cospi) __MF_HV1(tanpi) __MF_HV1(floor) __MF_HV1(ceil) __MF_HV1(round)
                __MF_HV1(rint) __MF_HV1(trunc) __MF_HV1(fract) __MF_HV1(sign) __MF_HV1(saturate) __MF_HV2(min)
                    __MF_HV2(max) __MF_HV2(fmin) __MF_HV2(fmax) __MF_HV2(pow) __MF_HV2(powr) __MF_HV2(atan2)
                        __MF_HV2(fmod) __MF_HV2(copysign) __MF_HV2(fdim) __MF_HV2(nextafter) __MF_HV2(divide)
                            __MF_HV2(step) __MF_HV3(clamp) __MF_HV3(mix) __MF_HV3(fma) __MF_HV3(fmin3) __MF_HV3(fmax3)
                                __MF_HV3(min3) __MF_HV3(max3) __MF_HV3(fmedian3) __MF_HV3(median3) __MF_HV3(smoothstep)
                                    __MF_VEC_PRED(isinf, __mf_is_hvec) __MF_VEC_PRED(isnan, __mf_is_hvec)
                                        __MF_VEC_PRED(isfinite, __mf_is_hvec) __MF_VEC_PRED(isnormal, __mf_is_hvec)
                                            __MF_VEC_PRED(signbit, __mf_is_hvec)
#undef __MF_HV1
#undef __MF_HV2
#undef __MF_HV3

    // Geometric on half vectors: computed in float, rounded once.
    template <class V, __mf_if<__mf_is_hvec<V>> = 0>
    METAL_FUNC half dot(V a, V b) {
  float r = static_cast<float>(a[0]) * static_cast<float>(b[0]);
  for (int i = 1; i < __mf_vt<V>::n; ++i) r = __builtin_fmaf(static_cast<float>(a[i]), static_cast<float>(b[i]), r);
  return static_cast<half>(r);
}
template <class V, __mf_if<__mf_is_hvec<V>> = 0>
METAL_FUNC float __mf_hdot(V a, V b) {
  float r = static_cast<float>(a[0]) * static_cast<float>(b[0]);
  for (int i = 1; i < __mf_vt<V>::n; ++i) r = __builtin_fmaf(static_cast<float>(a[i]), static_cast<float>(b[i]), r);
  return r;
}
template <class V, __mf_if<__mf_is_hvec<V>> = 0>
METAL_FUNC half length_squared(V a) {
  return static_cast<half>(__mf_hdot(a, a));
}
template <class V, __mf_if<__mf_is_hvec<V>> = 0>
METAL_FUNC half length(V a) {
  return static_cast<half>(__builtin_sqrtf(__mf_hdot(a, a)));
}
template <class V, __mf_if<__mf_is_hvec<V>> = 0>
METAL_FUNC half distance(V a, V b) {
  return length(a - b);
}
template <class V, __mf_if<__mf_is_hvec<V>> = 0>
METAL_FUNC half distance_squared(V a, V b) {
  return length_squared(a - b);
}
template <class V, __mf_if<__mf_is_hvec<V>> = 0>
METAL_FUNC V normalize(V a) {
  float inv = 1.0f / __builtin_sqrtf(__mf_hdot(a, a));
  V r = {};
  for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = static_cast<half>(static_cast<float>(a[i]) * inv);
  return r;
}
METAL_FUNC half3 cross(half3 a, half3 b) {
  float ax = a.x, ay = a.y, az = a.z, bx = b.x, by = b.y, bz = b.z;
  half3 r = {static_cast<half>(ay * bz - az * by), static_cast<half>(az * bx - ax * bz),
             static_cast<half>(ax * by - ay * bx)};
  return r;
}

// Mixed scalar arguments: one float (or half) argument with integer
// arguments, e.g. max(x, 0) or clamp(h, 0, 1), compute in that floating type
// (otherwise the call is ambiguous between the float, half and integer
// overloads). float mixed with half stays ambiguous (a compile error).
template <class F, class... O>
inline constexpr bool __mf_fp_with_ints = (__is_same(F, float) || __is_same(F, half)) && (__mf_is_int<O> && ...);
template <class A, class B, class C = int>
using __mf_mixed_fp =
    __mf_cond<__mf_fp_with_ints<A, B, C>, A,
              __mf_cond<__mf_fp_with_ints<B, A, C>, B, __mf_cond<__mf_fp_with_ints<C, A, B>, C, void>>>;
#define __MF_MIXED2(NAME)                                                                      \
  template <class A, class B, class F = __mf_mixed_fp<A, B>, __mf_if<!__is_same(F, void)> = 0> \
  METAL_FUNC F NAME(A a, B b) {                                                                \
    return NAME(static_cast<F>(a), static_cast<F>(b));                                         \
  }
#define __MF_MIXED3(NAME)                                                                                  \
  template <class A, class B, class C, class F = __mf_mixed_fp<A, B, C>, __mf_if<!__is_same(F, void)> = 0> \
  METAL_FUNC F NAME(A a, B b, C c) {                                                                       \
    return NAME(static_cast<F>(a), static_cast<F>(b), static_cast<F>(c));                                  \
  }
__MF_MIXED2(min)
__MF_MIXED2(max) __MF_MIXED2(fmin) __MF_MIXED2(fmax) __MF_MIXED2(pow) __MF_MIXED2(powr) __MF_MIXED2(atan2)
    __MF_MIXED2(fmod) __MF_MIXED2(copysign) __MF_MIXED2(fdim) __MF_MIXED2(divide) __MF_MIXED2(step) __MF_MIXED3(clamp)
        __MF_MIXED3(mix) __MF_MIXED3(fma) __MF_MIXED3(smoothstep) __MF_MIXED3(fmin3) __MF_MIXED3(fmax3)
            __MF_MIXED3(min3) __MF_MIXED3(max3) __MF_MIXED3(median3) __MF_MIXED3(fmedian3)
#undef __MF_MIXED2
#undef __MF_MIXED3

// ---- integers ---------------------------------------------------------------
#define __MF_INT_FUNCS(T)                                                                                         \
  METAL_FUNC T min(T x, T y) { return y < x ? y : x; }                                                            \
  METAL_FUNC T max(T x, T y) { return x < y ? y : x; }                                                            \
  METAL_FUNC T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }                                             \
  METAL_FUNC T min3(T x, T y, T z) { return min(min(x, y), z); }                                                  \
  METAL_FUNC T max3(T x, T y, T z) { return max(max(x, y), z); }                                                  \
  METAL_FUNC T median3(T x, T y, T z) { return max(min(x, y), min(max(x, y), z)); }                               \
  METAL_FUNC T abs(T x) { return x < static_cast<T>(0) ? static_cast<T>(0 - x) : x; }                             \
  METAL_FUNC T popcount(T x) {                                                                                    \
    return static_cast<T>(__builtin_popcountl(static_cast<ulong>(static_cast<make_unsigned_t<T>>(x))));           \
  }                                                                                                               \
  METAL_FUNC T clz(T x) {                                                                                         \
    ulong u = static_cast<ulong>(static_cast<make_unsigned_t<T>>(x));                                             \
    return static_cast<T>(u == 0 ? sizeof(T) * 8 : static_cast<ulong>(__builtin_clzl(u)) - (64 - sizeof(T) * 8)); \
  }                                                                                                               \
  METAL_FUNC T ctz(T x) {                                                                                         \
    ulong u = static_cast<ulong>(static_cast<make_unsigned_t<T>>(x));                                             \
    return static_cast<T>(u == 0 ? sizeof(T) * 8 : static_cast<ulong>(__builtin_ctzl(u)));                        \
  }                                                                                                               \
  METAL_FUNC make_unsigned_t<T> absdiff(T x, T y) {                                                               \
    return x > y ? static_cast<make_unsigned_t<T>>(static_cast<make_unsigned_t<T>>(x) -                           \
                                                   static_cast<make_unsigned_t<T>>(y))                            \
                 : static_cast<make_unsigned_t<T>>(static_cast<make_unsigned_t<T>>(y) -                           \
                                                   static_cast<make_unsigned_t<T>>(x));                           \
  }
                __MF_INT_FUNCS(char) __MF_INT_FUNCS(uchar) __MF_INT_FUNCS(short) __MF_INT_FUNCS(ushort)
                    __MF_INT_FUNCS(int) __MF_INT_FUNCS(uint) __MF_INT_FUNCS(long) __MF_INT_FUNCS(ulong)
#undef __MF_INT_FUNCS
                        METAL_FUNC int mulhi(int x, int y) {
  return static_cast<int>((static_cast<long>(x) * y) >> 32);
}
METAL_FUNC uint mulhi(uint x, uint y) { return static_cast<uint>((static_cast<ulong>(x) * y) >> 32); }
METAL_FUNC short mulhi(short x, short y) { return static_cast<short>((x * y) >> 16); }
METAL_FUNC ushort mulhi(ushort x, ushort y) { return static_cast<ushort>((static_cast<uint>(x) * y) >> 16); }
METAL_FUNC char mulhi(char x, char y) { return static_cast<char>((x * y) >> 8); }
METAL_FUNC uchar mulhi(uchar x, uchar y) { return static_cast<uchar>((static_cast<uint>(x) * y) >> 8); }
METAL_FUNC long mulhi(long x, long y) { return static_cast<long>((static_cast<__int128>(x) * y) >> 64); }
METAL_FUNC ulong mulhi(ulong x, ulong y) { return static_cast<ulong>((static_cast<unsigned __int128>(x) * y) >> 64); }

#define __MF_IV1(NAME) __MF_VEC_UNARY(NAME, __mf_is_ivec)
#define __MF_IV2(NAME) __MF_VEC_BINARY(NAME, __mf_is_ivec)
#define __MF_IV3(NAME) __MF_VEC_TERNARY(NAME, __mf_is_ivec)
__MF_IV1(abs)
__MF_IV1(popcount) __MF_IV1(clz) __MF_IV1(ctz) __MF_IV2(min) __MF_IV2(max) __MF_IV2(mulhi) __MF_IV3(clamp)
    __MF_IV3(min3) __MF_IV3(max3) __MF_IV3(median3)
#undef __MF_IV1
#undef __MF_IV2
#undef __MF_IV3
        template <class V, __mf_if<__mf_is_ivec<V>> = 0>
        METAL_FUNC make_unsigned_t<V> absdiff(V a, V b) {
  make_unsigned_t<V> r = {};
  for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = absdiff(a[i], b[i]);
  return r;
}

// ---- relational ---------------------------------------------------------------
// all/any: true if every / some component is non-zero (boolN or mask vectors).
template <class V, __mf_if<__mf_vt<V>::is_vec && __mf_is_int<typename __mf_vt<V>::elem>> = 0>
METAL_FUNC bool all(V v) {
  for (int i = 0; i < __mf_vt<V>::n; ++i)
    if (v[i] == 0) return false;
  return true;
}
template <class V, __mf_if<__mf_vt<V>::is_vec && __mf_is_int<typename __mf_vt<V>::elem>> = 0>
METAL_FUNC bool any(V v) {
  for (int i = 0; i < __mf_vt<V>::n; ++i)
    if (v[i] != 0) return true;
  return false;
}
METAL_FUNC bool all(bool b) { return b; }
METAL_FUNC bool any(bool b) { return b; }

// select(a, b, c): c ? b : a, per component for vectors (c: boolN or a mask
// vector of the same length), whole value for a scalar bool c.
template <class T>
METAL_FUNC T select(T a, __mf_id<T> b, bool c) {
  return c ? b : a;
}
template <class V, class C,
          __mf_if<__mf_vt<V>::is_vec && __mf_vt<C>::is_vec && __mf_is_int<typename __mf_vt<C>::elem>> = 0>
METAL_FUNC V select(V a, __mf_id<V> b, C c) {
  static_assert(__mf_vt<V>::n == __mf_vt<C>::n, "select(a, b, c): c must have as many components as a and b");
  V r = a;
  for (int i = 0; i < __mf_vt<V>::n; ++i)
    if (c[i] != 0) r[i] = b[i];
  return r;
}

}  // namespace metal
