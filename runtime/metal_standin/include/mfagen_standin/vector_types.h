// Metal stand-in: vector types.
//
// * charN .. floatN, halfN (N = 2, 3, 4) are clang ext_vector_type typedefs:
//   swizzles (.xy, .rgba, .s01 ...) and element-wise operators are native.
//   Layout and size match Metal (3-component vectors occupy 4 slots).
// * boolN: clang rejects ext vectors of bool, so boolN is an ext vector of
//   `signed char` (a type otherwise unused by MSL code; int8_t is `char`).
//   Element value 0 is false, any other value is true; conversions made by the
//   stand-in (boolN(x), (boolN)x) store 1 for true. Note: comparisons of
//   vectors yield clang's mask vectors (-1/0) of the same-size integer type
//   (float4 < float4 -> int4), so `bool4 m = a < b;` does not compile (write
//   bool4(a < b)); all(), any() and select() accept those masks.
// * bfloatN (N = 2, 3, 4) are structs with members x, y, z, w, operator[] and
//   element-wise arithmetic/comparisons; swizzles and .rgba are not available
//   on them (compile error). Size/alignment: 4/4, 8/8, 8/8 (like Metal).
// * metal::vec<T, N> maps to the types above (any N >= 1 for builtin element
//   types, N >= 2 for bfloat: N >= 5 is __mf_bfloatn<N>, elements and
//   operator[] only, as MLX's NAX fragments vec<bfloat, 8> use it). It is an
//   alias through a trait, so a function template parameter `vec<T, N>` does
//   not deduce T and N; where an alias template over vec is deduced through
//   (MLX's dtype_frag_t<T>), the cpu lowering deduces the vector's type and
//   takes T from it (__mf_vec_alias_matches, runtime/backends/cpu/msl_dialect.cpp).
#pragma once
#include "scalar_types.h"

template <class __E, int __N>
using __mf_ext_vec = __E __attribute__((ext_vector_type(__N)));

#define __MF_DECLARE_VECS(ELEM, NAME)                       \
  typedef ELEM NAME##2 __attribute__((ext_vector_type(2))); \
  typedef ELEM NAME##3 __attribute__((ext_vector_type(3))); \
  typedef ELEM NAME##4 __attribute__((ext_vector_type(4))); \
  namespace metal {                                         \
  using ::NAME##2;                                          \
  using ::NAME##3;                                          \
  using ::NAME##4;                                          \
  }

__MF_DECLARE_VECS(signed char, bool)
__MF_DECLARE_VECS(char, char)
__MF_DECLARE_VECS(unsigned char, uchar)
__MF_DECLARE_VECS(short, short)
__MF_DECLARE_VECS(unsigned short, ushort)
__MF_DECLARE_VECS(int, int)
__MF_DECLARE_VECS(unsigned int, uint)
__MF_DECLARE_VECS(long, long)
__MF_DECLARE_VECS(unsigned long, ulong)
__MF_DECLARE_VECS(half, half)
__MF_DECLARE_VECS(float, float)
#undef __MF_DECLARE_VECS

// ---- bfloat vectors ---------------------------------------------------------
struct __attribute__((aligned(4))) bfloat2 {
  bfloat x, y;
  METAL_FUNC bfloat& operator[](int i) { return i == 0 ? x : y; }
  METAL_FUNC const bfloat& operator[](int i) const { return i == 0 ? x : y; }
};
struct __attribute__((aligned(8))) bfloat3 {
  bfloat x, y, z;
  METAL_FUNC bfloat& operator[](int i) { return i == 0 ? x : i == 1 ? y : z; }
  METAL_FUNC const bfloat& operator[](int i) const { return i == 0 ? x : i == 1 ? y : z; }
};
struct __attribute__((aligned(8))) bfloat4 {
  bfloat x, y, z, w;
  METAL_FUNC bfloat& operator[](int i) { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
  METAL_FUNC const bfloat& operator[](int i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
};
// vec<bfloat, N> for N >= 5 (Metal 4 accepts them; MLX's NAX fragments are
// vec<bfloat, 8>): N elements, aligned like the 16-bit vectors of that
// size, no swizzles.
template <int __N>
struct __attribute__((aligned(__N >= 8 ? 16 : 8))) __mf_bfloatn {
  bfloat __e[__N];
  METAL_FUNC bfloat& operator[](int i) { return __e[i]; }
  METAL_FUNC const bfloat& operator[](int i) const { return __e[i]; }
};
static_assert(sizeof(::bfloat2) == 4 && sizeof(::bfloat3) == 8 && sizeof(::bfloat4) == 8 &&
                  sizeof(__mf_bfloatn<8>) == 16,
              "bfloat vector sizes");
namespace metal {
using ::bfloat2;
using ::bfloat3;
using ::bfloat4;
}  // namespace metal

// ---- packed vectors -----------------------------------------------------------
// MSL's packed_T2 and packed_T4 (Metal Shading Language specification,
// "Packed Vector Types"): the vector with the alignment of one element, so
// that it can be read or written at any element of a buffer (a row of halves
// four at a time, whatever its start). Here they are the vector types with
// that alignment: the same element type, size and operators, converting to and
// from vec<T, N> implicitly (the canonical type is the same). packed_T3 (three
// elements, no padding) is not provided: a kernel using it does not compile.
#define __MF_DECLARE_PACKED(ELEM, NAME)                                                     \
  typedef ELEM packed_##NAME##2 __attribute__((ext_vector_type(2), aligned(sizeof(ELEM)))); \
  typedef ELEM packed_##NAME##4 __attribute__((ext_vector_type(4), aligned(sizeof(ELEM)))); \
  namespace metal {                                                                         \
  using ::packed_##NAME##2;                                                                 \
  using ::packed_##NAME##4;                                                                 \
  }
__MF_DECLARE_PACKED(char, char)
__MF_DECLARE_PACKED(unsigned char, uchar)
__MF_DECLARE_PACKED(short, short)
__MF_DECLARE_PACKED(unsigned short, ushort)
__MF_DECLARE_PACKED(int, int)
__MF_DECLARE_PACKED(unsigned int, uint)
__MF_DECLARE_PACKED(half, half)
__MF_DECLARE_PACKED(float, float)
#undef __MF_DECLARE_PACKED
typedef bfloat2 packed_bfloat2 __attribute__((aligned(2)));
typedef bfloat4 packed_bfloat4 __attribute__((aligned(2)));
static_assert(sizeof(packed_half4) == 8 && alignof(packed_half4) == 2 && sizeof(packed_float4) == 16 &&
                  alignof(packed_float4) == 4 && sizeof(packed_bfloat4) == 8 && alignof(packed_bfloat4) == 2,
              "packed vector sizes and alignments (MSL specification, packed vector types)");
namespace metal {
using ::packed_bfloat2;
using ::packed_bfloat4;
}  // namespace metal

// ---- vector traits (internal) -----------------------------------------------
// __mf_vt<T>: is_vec, n (1 for scalars), elem (storage element type), lelem
// (logical element type: bool for boolN), is_bool_vec.
template <class T>
struct __mf_vt_impl {
  static constexpr bool is_vec = false;
  static constexpr bool is_bool_vec = false;
  static constexpr int n = 1;
  typedef T elem;
  typedef T lelem;
};
template <class __E, int __N>
struct __mf_vt_impl<__mf_ext_vec<__E, __N>> {
  static constexpr bool is_vec = true;
  static constexpr bool is_bool_vec = __is_same(__E, signed char);
  static constexpr int n = __N;
  typedef __E elem;
  typedef __mf_cond<is_bool_vec, bool, __E> lelem;
};
#define __MF_BF_VT(N)                          \
  template <>                                  \
  struct __mf_vt_impl<bfloat##N> {             \
    static constexpr bool is_vec = true;       \
    static constexpr bool is_bool_vec = false; \
    static constexpr int n = N;                \
    typedef bfloat elem;                       \
    typedef bfloat lelem;                      \
  };
__MF_BF_VT(2)
__MF_BF_VT(3)
__MF_BF_VT(4)
#undef __MF_BF_VT
template <int __N>
struct __mf_vt_impl<__mf_bfloatn<__N>> {
  static constexpr bool is_vec = true;
  static constexpr bool is_bool_vec = false;
  static constexpr int n = __N;
  typedef bfloat elem;
  typedef bfloat lelem;
};

template <class T>
using __mf_vt = __mf_vt_impl<__mf_unqual<T>>;

template <class T>
inline constexpr bool __mf_is_bfvec = __mf_vt<T>::is_vec && __is_same(typename __mf_vt<T>::elem, bfloat);

// ---- metal::vec<T, N> -------------------------------------------------------
template <class T, int N>
struct __mf_vec_sel {
  static_assert(N >= 1, "metal::vec<T, N>: N must be positive");
  typedef __mf_ext_vec<T, N> type;
};
template <int N>
struct __mf_vec_sel<bool, N> {
  typedef __mf_ext_vec<signed char, N> type;
};
template <int N>
struct __mf_vec_sel<bfloat, N> {
  static_assert(N >= 2, "metal::vec<bfloat, N>: the stand-in supports N >= 2 only");
  typedef __mf_bfloatn<N> type;
};
template <>
struct __mf_vec_sel<bfloat, 4> {
  typedef bfloat4 type;
};
template <>
struct __mf_vec_sel<bfloat, 2> {
  typedef bfloat2 type;
};
template <>
struct __mf_vec_sel<bfloat, 3> {
  typedef bfloat3 type;
};

namespace metal {
template <class T, int N>
using vec = typename ::__mf_vec_sel<T, N>::type;
}  // namespace metal

// Deduction through an alias template A over vec (MLX: `template <typename
// U> using dtype_frag_t = metal::vec<U, 8>;`, `load(thread dtype_frag_t<T>&
// dst, ...)`). vec is a trait here, so the cpu lowering deduces the argument's
// type V instead, takes T = __mf_vec_lelem_t<V> and keeps the function only
// when A<T> is V: T and the function set are Metal's, for bfloat and bool
// elements too (which an ext vector pattern could not deduce).
template <class V>
using __mf_vec_lelem_t = typename __mf_vt<V>::lelem;

// `scalar OP vector` with a scalar of higher rank than the vector's elements
// (`0.5 * a` with a half2 a, MLX's fft/radix.h): MSL section 2.13, the
// scalar converts to the element type. The repair of that error (the cpu
// backend's diagnostic_repair.h and mfagen check alike) casts the scalar to
// __mf_scalar_operand_t<decltype(VECTOR), decltype(SCALAR)>: the vector's
// element type, or the scalar's own type where VECTOR is no vector (another
// instantiation of the same template text).
template <class T>
struct __mf_scalar_operand_noref {
  typedef T type;
};
template <class T>
struct __mf_scalar_operand_noref<T&> {
  typedef T type;
};
template <class T>
struct __mf_scalar_operand_noref<T&&> {
  typedef T type;
};
template <class V, class S>
using __mf_scalar_operand_t =
    __mf_cond<__mf_vt<typename __mf_scalar_operand_noref<V>::type>::is_vec,
              typename __mf_vt<typename __mf_scalar_operand_noref<V>::type>::lelem,
              __mf_unqual<typename __mf_scalar_operand_noref<S>::type>>;
template <class V, template <class> class A, class T>
constexpr bool __mf_vec_alias_matches() {
  if constexpr (__mf_vt<V>::is_vec)
    return __is_same(__mf_unqual<V>, A<T>);
  else
    return false;
}

// ---- bfloat vector operators ------------------------------------------------
template <class V, __mf_if<__mf_is_bfvec<V>> = 0>
METAL_FUNC V operator-(V a) {
  for (int i = 0; i < __mf_vt<V>::n; ++i) a[i] = -a[i];
  return a;
}
template <class V, __mf_if<__mf_is_bfvec<V>> = 0>
METAL_FUNC V operator+(V a) {
  return a;
}
// Operand kinds accepted next to a bfloat vector: the same vector, bfloat, or
// an integer scalar (converted to bfloat first). float/half operands do not
// convert implicitly to bfloat in MSL, so they are rejected.
template <class V, class S>
inline constexpr bool __mf_bfvec_operand = __is_same(__mf_unqual<S>, __mf_unqual<V>) ||
                                           __is_same(__mf_unqual<S>, bfloat) || __is_integral(__mf_unqual<S>);
template <class V, class S>
METAL_FUNC bfloat __mf_bfvec_at(const S& s, int i) {
  if constexpr (__is_same(__mf_unqual<S>, __mf_unqual<V>))
    return s[i];
  else
    return bfloat(s);
}

#define __MF_BFV_ARITH(OP, OPEQ)                                                                                       \
  template <class A, class B, class V = __mf_cond<__mf_is_bfvec<A>, A, B>,                                             \
            __mf_if<(__mf_is_bfvec<A> || __mf_is_bfvec<B>)&&__mf_bfvec_operand<V, A> && __mf_bfvec_operand<V, B>> = 0> \
  METAL_FUNC __mf_unqual<V> operator OP(A a, B b) {                                                                    \
    __mf_unqual<V> r = {};                                                                                             \
    for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = __mf_bfvec_at<V>(a, i) OP __mf_bfvec_at<V>(b, i);                   \
    return r;                                                                                                          \
  }                                                                                                                    \
  template <class V, class B, __mf_if<__mf_is_bfvec<V> && __mf_bfvec_operand<V, B>> = 0>                               \
  METAL_FUNC V& operator OPEQ(V& a, B b) {                                                                             \
    for (int i = 0; i < __mf_vt<V>::n; ++i) a[i] = a[i] OP __mf_bfvec_at<V>(b, i);                                     \
    return a;                                                                                                          \
  }
__MF_BFV_ARITH(+, +=)
__MF_BFV_ARITH(-, -=)
__MF_BFV_ARITH(*, *=)
__MF_BFV_ARITH(/, /=)
#undef __MF_BFV_ARITH

// Comparisons give boolN (1 = true).
#define __MF_BFV_CMP(OP)                                                                                               \
  template <class A, class B, class V = __mf_cond<__mf_is_bfvec<A>, A, B>,                                             \
            __mf_if<(__mf_is_bfvec<A> || __mf_is_bfvec<B>)&&__mf_bfvec_operand<V, A> && __mf_bfvec_operand<V, B>> = 0> \
  METAL_FUNC __mf_ext_vec<signed char, __mf_vt<V>::n> operator OP(A a, B b) {                                          \
    __mf_ext_vec<signed char, __mf_vt<V>::n> r = {};                                                                   \
    for (int i = 0; i < __mf_vt<V>::n; ++i) r[i] = (__mf_bfvec_at<V>(a, i) OP __mf_bfvec_at<V>(b, i)) ? 1 : 0;         \
    return r;                                                                                                          \
  }
__MF_BFV_CMP(==)
__MF_BFV_CMP(!=)
__MF_BFV_CMP(<)
__MF_BFV_CMP(<=)
__MF_BFV_CMP(>)
__MF_BFV_CMP(>=)
#undef __MF_BFV_CMP
