// Metal stand-in: scalar types. Integer typedefs, METAL_FUNC, and `bfloat`.
//
// half   = the OpenCL builtin `half` (IEEE binary16; arithmetic is rounded to
//          half after every operation, like Metal's fp16 ALUs).
// bfloat = struct holding the 16 raw bits. Conversions follow MSL 3.1:
//   * bfloat -> float is implicit and exact;
//   * float -> bfloat and half -> bfloat are explicit only (bfloat(x),
//     static_cast<bfloat>(x)), rounding to nearest even, NaN stays NaN,
//     overflow gives inf. `bfloat b = 1.0f;` is a compile error, as in Metal;
//   * integer -> bfloat is implicit (correctly rounded, nearest even);
//   * bfloat -> half / integer / bool is explicit only;
//   * bfloat op bfloat -> bfloat (computed in float, rounded once);
//     bfloat op float -> float; bfloat op integer -> bfloat (the integer is
//     first converted to bfloat); bfloat op half -> compile error (MSL: the
//     two types have unordered conversion ranks).
#pragma once
#include "abi.h"
#include "profile_markers.h"
#include "unqual.h"

#define METAL_FUNC inline __attribute__((always_inline))
#define METAL_INTERNAL
#define METAL_ASM
#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 310
#endif
#define __HAVE_BFLOAT__ 1

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef char int8_t;  // Metal: int8_t is char (signed); `signed char` is reserved for bool vectors
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;

// ---- internal helpers -------------------------------------------------------
template <bool __B>
struct __mf_if_c {};
template <>
struct __mf_if_c<true> {
  typedef int type;
};
// Use as `template <class T, __mf_if<cond> = 0>`.
template <bool __B>
using __mf_if = typename __mf_if_c<__B>::type;
template <class T>
struct __mf_type_identity {
  typedef T type;
};
template <class T>
using __mf_id = typename __mf_type_identity<T>::type;
template <class T>
inline constexpr bool __mf_false = false;
template <bool __B, class T, class F>
struct __mf_cond_c {
  typedef T type;
};
template <class T, class F>
struct __mf_cond_c<false, T, F> {
  typedef F type;
};
template <bool __B, class T, class F>
using __mf_cond = typename __mf_cond_c<__B, T, F>::type;
template <class T>
inline constexpr bool __mf_is_int = __is_integral(T) && !__is_same(T, bool);

// ---- bfloat -----------------------------------------------------------------
METAL_FUNC constexpr ushort __mf_f32_to_bf16(float f) {
  if (!__builtin_is_constant_evaluated()) __MF_OP(__mf_op_convert, 1);  // one conversion on the GPU
  uint u = __builtin_bit_cast(uint, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<ushort>((u >> 16) | 0x0040u);  // NaN: keep sign, quiet
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even; overflow carries into inf
  return static_cast<ushort>(u >> 16);
}
// One widening on the GPU: an integer shift on Apple7/8, free where bfloat is
// native (Apple9+); the cost model prices it per chip (bf16_widen_cycles).
METAL_FUNC constexpr float __mf_bf16_to_f32(ushort b) {
  if (!__builtin_is_constant_evaluated()) __MF_OP(__mf_op_widen_bf16, 1);
  return __builtin_bit_cast(float, static_cast<uint>(b) << 16);
}
// Magnitude m (negated if neg) to bfloat bits with a single rounding.
METAL_FUNC constexpr ushort __mf_u64_to_bf16(ulong m, bool neg) {
  if (m < (1ul << 24)) {  // exact in float
    float f = static_cast<float>(m);
    return __mf_f32_to_bf16(neg ? -f : f);
  }
  int shift = (63 - __builtin_clzl(m)) - 7;  // keep 8 significant bits
  ulong q = m >> shift;
  ulong rem = m & ((1ul << shift) - 1ul);
  ulong halfway = 1ul << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1ul))) ++q;
  float f = static_cast<float>(q) * static_cast<float>(1ul << shift);  // exact
  return __mf_f32_to_bf16(neg ? -f : f);
}
template <class I>
METAL_FUNC constexpr ushort __mf_int_to_bf16(I i) {
  if constexpr (__is_same(I, bool)) {
    return i ? 0x3f80 : 0;
  } else if constexpr (static_cast<I>(-1) < static_cast<I>(0)) {
    bool neg = i < 0;
    ulong m = neg ? 0ul - static_cast<ulong>(static_cast<long>(i)) : static_cast<ulong>(static_cast<long>(i));
    return __mf_u64_to_bf16(m, neg);
  } else {
    return __mf_u64_to_bf16(static_cast<ulong>(i), false);
  }
}

// The scalar type a class object converts to: overload resolution over one
// function per Metal scalar type picks the one whose parameter is exactly
// what the class's conversion function returns (identity after the
// user-defined conversion beats every promotion and conversion). No type
// when the class has no such function, several, or a conversion template.
template <class S>
struct __mf_scalar_tag {
  typedef S type;
};
#define __MF_SCALAR_PROBE(S) __mf_scalar_tag<S> __mf_scalar_probe(S);
__MF_SCALAR_PROBE(bool)
__MF_SCALAR_PROBE(char)
__MF_SCALAR_PROBE(uchar)
__MF_SCALAR_PROBE(short)
__MF_SCALAR_PROBE(ushort)
__MF_SCALAR_PROBE(int)
__MF_SCALAR_PROBE(uint)
__MF_SCALAR_PROBE(long)
__MF_SCALAR_PROBE(ulong)
__MF_SCALAR_PROBE(half)
__MF_SCALAR_PROBE(float)
#undef __MF_SCALAR_PROBE
template <class T>
T&& __mf_declval();
template <class C>
using __mf_class_scalar_t = typename decltype(__mf_scalar_probe(__mf_declval<C>()))::type;
template <class C>
struct __mf_noref {
  typedef C type;
};
template <class C>
struct __mf_noref<C&> {
  typedef C type;
};
template <class C, class = void>
inline constexpr bool __mf_class_to_integer = false;
template <class C>
inline constexpr bool __mf_class_to_integer<C, decltype(void(__mf_class_scalar_t<C>()))> =
    __is_class(typename __mf_noref<C>::type) && __is_integral(__mf_class_scalar_t<C>);

struct bfloat {
  ushort __mf_bits;
  struct __mf_bits_tag {};
  bfloat() = default;
  constexpr bfloat(ushort bits, __mf_bits_tag) : __mf_bits(bits) {}
  // C++ for OpenCL cannot bind a `constant` object to the implicit copy
  // constructor's generic reference; Metal copies program-scope constants.
  // Templates, so that they are not copy operations and bfloat stays
  // trivially copyable (as_type, memcpy).
  template <class B, __mf_if<__is_same(B, bfloat)> = 0>
  constexpr bfloat(const __constant B& other) : __mf_bits(other.__mf_bits) {}
  // `static constexpr constant U init = Limits<U>::max;` (MLX's arg_reduce,
  // U = bfloat): a constant object copied from another. Metal's bfloat is a
  // builtin scalar, copied in every address space; C++ for OpenCL constructs
  // a `constant` object only with a constructor qualified for it.
  template <class B, __mf_if<__is_same(B, bfloat)> = 0>
  constexpr bfloat(const __constant B& other) __constant : __mf_bits(other.__mf_bits) {}
  template <class B, __mf_if<__is_same(B, bfloat)> = 0>
  constexpr bfloat(const B& other) __constant : __mf_bits(other.__mf_bits) {}
  template <class B, __mf_if<__is_same(B, bfloat)> = 0>
  constexpr bfloat& operator=(const __constant B& other) {
    __mf_bits = other.__mf_bits;
    return *this;
  }
  constexpr explicit bfloat(float f) : __mf_bits(__mf_f32_to_bf16(f)) {}
  constexpr explicit bfloat(half h) : __mf_bits(__mf_f32_to_bf16(static_cast<float>(h))) {}
  // Unsuffixed floating literals (64-bit) go through float: bfloat(0.1).
  template <class D, __mf_if<__is_floating_point(D) && !__is_same(D, float) && !__is_same(D, half)> = 0>
  constexpr explicit bfloat(D d) : __mf_bits(__mf_f32_to_bf16(static_cast<float>(d))) {}
  template <class I, __mf_if<__is_integral(I)> = 0>
  constexpr bfloat(I i) : __mf_bits(__mf_int_to_bf16(i)) {}
  // bfloat(c), static_cast<bfloat>(c) with c an object of a class that
  // converts to bool or an integer (MLX's gemv_masked.h: `T(mask_out)`, T =
  // bfloat, the mask a class with `operator bool()` in every address space).
  // MSL's bfloat is a builtin scalar type (specification, section 2.1,
  // scalar data types), and MSL follows C++14 (section 1.4): initializing a
  // non-class type from a class object calls the class's conversion function
  // and applies the standard conversion to its result ([dcl.init]/17.7,
  // [over.match.conv]), here bool or integer -> bfloat, one rounding. As a
  // class, bfloat found its float and half constructors equally good after
  // that conversion (ambiguous). Explicit only: classes that convert to float
  // or half already take those constructors, and an implicit constructor
  // would tie with conversion functions in overload resolution where Metal's
  // builtin conversion does not.
  template <class C, __mf_if<__mf_class_to_integer<C&&>> = 0>
  constexpr explicit bfloat(C&& c) : __mf_bits(__mf_int_to_bf16(static_cast<__mf_class_scalar_t<C&&>>(c))) {}
  // Assignment from such an object (MLX's steel_gemm_masked.h:
  // `lhs_mask_op.scale = lhs_mask[i]`, a bfloat member and a `const device
  // _NoMask` or `bool` mask): for the builtin type an implicit conversion,
  // the class's conversion function then the standard conversion, as
  // above. The constructor is explicit, so assignment needs its own overload.
  template <class C, __mf_if<__mf_class_to_integer<C&&>> = 0>
  constexpr bfloat& operator=(C&& c) {
    __mf_bits = __mf_int_to_bf16(static_cast<__mf_class_scalar_t<C&&>>(c));
    return *this;
  }
  // Implicit to float (a template, so that it is no path to half or int).
  template <class T, __mf_if<__is_same(T, float)> = 0>
  constexpr operator T() const {
    return __mf_bf16_to_f32(__mf_bits);
  }
  // And to bool, as Metal's builtin bfloat converts (MSL section 2.1; MLX's
  // reduce_row.h assigns `const device bfloat` elements to bool values for
  // its And/Or reductions): nonzero is true. A template that deduces only
  // bool, so that it is no path to int (bool -> int would promote a truth
  // value where Metal converts the number). The integer conversions stay
  // explicit and leave bool to it (`if (x)` would find both): implicit, they
  // made abs, min, max and clamp of a bfloat ambiguous between the stand-in's
  // float and integer overloads, where they take the float one.
  template <class T, __mf_if<__is_same(T, bool)> = 0>
  constexpr operator T() const {
    return __mf_bf16_to_f32(__mf_bits) != 0.0f;
  }
  constexpr explicit operator half() const { return static_cast<half>(__mf_bf16_to_f32(__mf_bits)); }
  template <class I, __mf_if<__is_integral(I) && !__is_same(I, bool)> = 0>
  constexpr explicit operator I() const {
    return static_cast<I>(__mf_bf16_to_f32(__mf_bits));
  }
  // The same conversions of a `constant` bfloat (`float w_min = Limits<T>::max;`
  // in MLX's quantized kernels): the generic ones cannot take a constant object.
  template <class T, __mf_if<__is_same(T, float)> = 0>
  constexpr operator T() const __constant {
    return __mf_bf16_to_f32(__mf_bits);
  }
  template <class T, __mf_if<__is_same(T, bool)> = 0>
  constexpr operator T() const __constant {
    return __mf_bf16_to_f32(__mf_bits) != 0.0f;
  }
  constexpr explicit operator half() const __constant { return static_cast<half>(__mf_bf16_to_f32(__mf_bits)); }
  template <class I, __mf_if<__is_integral(I) && !__is_same(I, bool)> = 0>
  constexpr explicit operator I() const __constant {
    return static_cast<I>(__mf_bf16_to_f32(__mf_bits));
  }
  static constexpr bfloat __mf_from_bits(ushort bits) { return bfloat(bits, __mf_bits_tag{}); }
};
static_assert(sizeof(bfloat) == 2 && alignof(bfloat) == 2, "bfloat must be 2 bytes");

METAL_FUNC constexpr float __mf_bf(bfloat b) { return __mf_bf16_to_f32(b.__mf_bits); }

// __mf_implicit_scalar(x): Metal's implicit conversion of a bfloat to
// another scalar type, where the stand-in's bfloat (a class) converts to the
// integer types only explicitly (above, for the overloads it keeps
// unambiguous). The cpu backend's diagnostic repair and the checker insert
// it around the source of an assignment clang rejects for that reason
// (`out[i] = tgp_vals[i]`, a uint output and a threadgroup bfloat, MLX's
// sort.h); in the template's other instantiations it passes x through.
struct __mf_bfloat_value {
  float value;
  template <class T, __mf_if<__is_arithmetic(T)> = 0>
  constexpr operator T() const {
    return static_cast<T>(value);
  }
  constexpr operator bfloat() const { return bfloat(value); }
};
template <class B, __mf_if<__is_same(__mf_unqual<B>, bfloat)> = 0>
METAL_FUNC constexpr __mf_bfloat_value __mf_implicit_scalar(const B& x) {
  return {__mf_bf16_to_f32(x.__mf_bits)};
}
template <class X, __mf_if<!__is_same(__mf_unqual<typename __mf_noref<X>::type>, bfloat)> = 0>
METAL_FUNC constexpr X&& __mf_implicit_scalar(X&& x) {
  return static_cast<X&&>(x);
}

#define __MF_BF_HALF_ERROR                                                                                   \
  "MSL: bfloat and half cannot be mixed in one operation (unordered conversion ranks); convert one operand " \
  "explicitly, e.g. float(h) or bfloat(h)"

METAL_FUNC constexpr bfloat operator+(bfloat a) { return a; }
METAL_FUNC constexpr bfloat operator-(bfloat a) {
  return bfloat::__mf_from_bits(static_cast<ushort>(a.__mf_bits ^ 0x8000u));
}

#define __MF_BF_ARITH(OP, OPEQ)                                                                            \
  METAL_FUNC constexpr bfloat operator OP(bfloat a, bfloat b) { return bfloat(__mf_bf(a) OP __mf_bf(b)); } \
  METAL_FUNC constexpr float operator OP(bfloat a, float b) { return __mf_bf(a) OP b; }                    \
  METAL_FUNC constexpr float operator OP(float a, bfloat b) { return a OP __mf_bf(b); }                    \
  template <class I, __mf_if<__is_integral(I)> = 0>                                                        \
  METAL_FUNC constexpr bfloat operator OP(bfloat a, I b) {                                                 \
    return bfloat(__mf_bf(a) OP __mf_bf(bfloat(b)));                                                       \
  }                                                                                                        \
  template <class I, __mf_if<__is_integral(I)> = 0>                                                        \
  METAL_FUNC constexpr bfloat operator OP(I a, bfloat b) {                                                 \
    return bfloat(__mf_bf(bfloat(a)) OP __mf_bf(b));                                                       \
  }                                                                                                        \
  template <class H, __mf_if<__is_same(H, half)> = 0>                                                      \
  METAL_FUNC bfloat operator OP(bfloat a, H) {                                                             \
    static_assert(__mf_false<H>, __MF_BF_HALF_ERROR);                                                      \
    return a;                                                                                              \
  }                                                                                                        \
  template <class H, __mf_if<__is_same(H, half)> = 0>                                                      \
  METAL_FUNC bfloat operator OP(H, bfloat b) {                                                             \
    static_assert(__mf_false<H>, __MF_BF_HALF_ERROR);                                                      \
    return b;                                                                                              \
  }                                                                                                        \
  METAL_FUNC constexpr bfloat& operator OPEQ(bfloat& a, bfloat b) { return a = a OP b; }                   \
  METAL_FUNC constexpr bfloat& operator OPEQ(bfloat& a, float b) { return a = bfloat(__mf_bf(a) OP b); }   \
  template <class I, __mf_if<__is_integral(I)> = 0>                                                        \
  METAL_FUNC constexpr bfloat& operator OPEQ(bfloat& a, I b) {                                             \
    return a = a OP b;                                                                                     \
  }                                                                                                        \
  template <class H, __mf_if<__is_same(H, half)> = 0>                                                      \
  METAL_FUNC bfloat& operator OPEQ(bfloat& a, H) {                                                         \
    static_assert(__mf_false<H>, __MF_BF_HALF_ERROR);                                                      \
    return a;                                                                                              \
  }                                                                                                        \
  /* A template on the float's own address space: a plain float& would bind    */                          \
  /* `thread float` through a generic reference and tie with the builtin one. */                          \
  template <class F, __mf_if<__is_same(__mf_unqual<F>, float)> = 0>                                       \
  METAL_FUNC constexpr F& operator OPEQ(F& a, bfloat b) {                                                  \
    return a = a OP __mf_bf(b);                                                                            \
  }

__MF_BF_ARITH(+, +=)
__MF_BF_ARITH(-, -=)
__MF_BF_ARITH(*, *=)
__MF_BF_ARITH(/, /=)
#undef __MF_BF_ARITH

METAL_FUNC constexpr bfloat& operator++(bfloat& a) { return a = a + 1; }
METAL_FUNC constexpr bfloat& operator--(bfloat& a) { return a = a - 1; }
METAL_FUNC constexpr bfloat operator++(bfloat& a, int) {
  bfloat r = a;
  a = a + 1;
  return r;
}
METAL_FUNC constexpr bfloat operator--(bfloat& a, int) {
  bfloat r = a;
  a = a - 1;
  return r;
}

#define __MF_BF_CMP(OP)                                                                          \
  METAL_FUNC constexpr bool operator OP(bfloat a, bfloat b) { return __mf_bf(a) OP __mf_bf(b); } \
  METAL_FUNC constexpr bool operator OP(bfloat a, float b) { return __mf_bf(a) OP b; }           \
  METAL_FUNC constexpr bool operator OP(float a, bfloat b) { return a OP __mf_bf(b); }           \
  template <class I, __mf_if<__is_integral(I)> = 0>                                              \
  METAL_FUNC constexpr bool operator OP(bfloat a, I b) {                                         \
    return __mf_bf(a) OP __mf_bf(bfloat(b));                                                     \
  }                                                                                              \
  template <class I, __mf_if<__is_integral(I)> = 0>                                              \
  METAL_FUNC constexpr bool operator OP(I a, bfloat b) {                                         \
    return __mf_bf(bfloat(a)) OP __mf_bf(b);                                                     \
  }                                                                                              \
  template <class H, __mf_if<__is_same(H, half)> = 0>                                            \
  METAL_FUNC bool operator OP(bfloat, H) {                                                       \
    static_assert(__mf_false<H>, __MF_BF_HALF_ERROR);                                            \
    return false;                                                                                \
  }                                                                                              \
  template <class H, __mf_if<__is_same(H, half)> = 0>                                            \
  METAL_FUNC bool operator OP(H, bfloat) {                                                       \
    static_assert(__mf_false<H>, __MF_BF_HALF_ERROR);                                            \
    return false;                                                                                \
  }

__MF_BF_CMP(==)
__MF_BF_CMP(!=)
__MF_BF_CMP(<)
__MF_BF_CMP(<=)
__MF_BF_CMP(>)
__MF_BF_CMP(>=)
#undef __MF_BF_CMP

METAL_FUNC constexpr bool operator!(bfloat a) { return !(__mf_bf(a) != 0.0f); }

namespace metal {
using ::bfloat;
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::int8_t;
using ::ptrdiff_t;
using ::size_t;
using ::uchar;
using ::uint;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::uint8_t;
using ::ulong;
using ::ushort;
}  // namespace metal
