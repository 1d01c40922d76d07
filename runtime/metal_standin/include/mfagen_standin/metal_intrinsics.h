// Metal stand-in: the few `__metal_*` compiler intrinsics that public MSL code
// calls directly (MLX's bf16_math.h builds its bfloat math and simd overloads
// on them). Float math takes the trailing fast-math flag and ignores it.
#pragma once
#include "atomic.h"

#define __METAL_MAYBE_FAST_MATH__ 0
#define __METAL_FAST_MATH__ 1
#define __METAL_PRECISE_MATH__ 2

#define __MF_INTRIN1(NAME) \
  METAL_FUNC float __metal_##NAME(float x, int = 0) { return ::__mf_fm::NAME(x); }
#define __MF_INTRIN2(NAME) \
  METAL_FUNC float __metal_##NAME(float x, float y, int = 0) { return ::__mf_fm::NAME(x, y); }
#define __MF_INTRIN3(NAME) \
  METAL_FUNC float __metal_##NAME(float x, float y, float z, int = 0) { return ::__mf_fm::NAME(x, y, z); }
__MF_INTRIN1(fabs)
__MF_INTRIN1(acos) __MF_INTRIN1(acosh) __MF_INTRIN1(asin) __MF_INTRIN1(asinh) __MF_INTRIN1(atan) __MF_INTRIN1(atanh)
    __MF_INTRIN1(ceil) __MF_INTRIN1(cos) __MF_INTRIN1(cosh) __MF_INTRIN1(cospi) __MF_INTRIN1(exp) __MF_INTRIN1(exp10)
        __MF_INTRIN1(exp2) __MF_INTRIN1(floor) __MF_INTRIN1(fract) __MF_INTRIN1(log) __MF_INTRIN1(log10)
            __MF_INTRIN1(log2) __MF_INTRIN1(rint) __MF_INTRIN1(round) __MF_INTRIN1(rsqrt) __MF_INTRIN1(sin)
                __MF_INTRIN1(sinh) __MF_INTRIN1(sinpi) __MF_INTRIN1(sqrt) __MF_INTRIN1(tan) __MF_INTRIN1(tanh)
                    __MF_INTRIN1(tanpi) __MF_INTRIN1(trunc) __MF_INTRIN2(atan2) __MF_INTRIN2(divide) __MF_INTRIN2(fmax)
                        __MF_INTRIN2(fmin) __MF_INTRIN2(fmod) __MF_INTRIN2(nextafter) __MF_INTRIN2(pow)
                            __MF_INTRIN2(powr) __MF_INTRIN3(fma) __MF_INTRIN3(fmax3) __MF_INTRIN3(fmin3)
                                __MF_INTRIN3(fmedian3)
#undef __MF_INTRIN1
#undef __MF_INTRIN2
#undef __MF_INTRIN3
                                    METAL_FUNC float __metal_frexp(float x, int* e) {
  return ::__mf_fm::frexp(x, *e);
}
METAL_FUNC float __metal_ldexp(float x, int k, int = 0) { return ::__mf_fm::ldexp(x, k); }

METAL_FUNC ushort __metal_get_simdgroup_size(ushort) { return 32; }
METAL_FUNC uint __metal_get_simdgroup_size(uint) { return 32; }
// thread_index_in_simdgroup, as MLX's steel/attn/nax.h reads it
// (__metal_get_thread_index_in_simdgroup(ushort())).
METAL_FUNC ushort __metal_get_thread_index_in_simdgroup(ushort) { return ushort(__mf_simd_lane()); }
METAL_FUNC uint __metal_get_thread_index_in_simdgroup(uint) { return __mf_simd_lane(); }

#define __MF_INTRIN_SIMD1(NAME)         \
  template <class T>                    \
  METAL_FUNC T __metal_##NAME(T data) { \
    return ::metal::NAME(data);         \
  }
#define __MF_INTRIN_SIMD2(NAME)                     \
  template <class T>                                \
  METAL_FUNC T __metal_##NAME(T data, ushort arg) { \
    return ::metal::NAME(data, arg);                \
  }
// The bitwise reductions also take floating-point scalars (MLX's bf16_math.h
// calls __metal_simd_xor(float)): they operate on the bits.
template <int Bytes> struct __mf_bits_of;
template <> struct __mf_bits_of<2> { using type = ushort; };
template <> struct __mf_bits_of<4> { using type = uint; };
template <> struct __mf_bits_of<8> { using type = ulong; };
#define __MF_INTRIN_SIMD_BITWISE(NAME)                                                   \
  template <class T>                                                                     \
  METAL_FUNC T __metal_##NAME(T data) {                                                  \
    if constexpr (::metal::__mf_simd_integer<T>) {                                       \
      return ::metal::NAME(data);                                                        \
    } else {                                                                             \
      using Bits = typename __mf_bits_of<sizeof(T)>::type;                               \
      return __builtin_bit_cast(T, ::metal::NAME(__builtin_bit_cast(Bits, data)));       \
    }                                                                                    \
  }
__MF_INTRIN_SIMD1(simd_sum)
__MF_INTRIN_SIMD1(simd_product)
__MF_INTRIN_SIMD1(simd_max)
__MF_INTRIN_SIMD1(simd_min)
__MF_INTRIN_SIMD_BITWISE(simd_and)
__MF_INTRIN_SIMD_BITWISE(simd_or)
__MF_INTRIN_SIMD_BITWISE(simd_xor)
__MF_INTRIN_SIMD1(simd_prefix_inclusive_sum)
__MF_INTRIN_SIMD1(simd_prefix_exclusive_sum)
__MF_INTRIN_SIMD1(simd_prefix_inclusive_product)
__MF_INTRIN_SIMD1(simd_prefix_exclusive_product)
__MF_INTRIN_SIMD1(simd_broadcast_first)
__MF_INTRIN_SIMD2(simd_shuffle)
__MF_INTRIN_SIMD2(simd_broadcast)
__MF_INTRIN_SIMD2(simd_shuffle_xor)
__MF_INTRIN_SIMD2(simd_shuffle_up)
__MF_INTRIN_SIMD2(simd_shuffle_down)
__MF_INTRIN_SIMD2(simd_shuffle_rotate_up)
__MF_INTRIN_SIMD2(simd_shuffle_rotate_down)
#undef __MF_INTRIN_SIMD_BITWISE
#undef __MF_INTRIN_SIMD1
#undef __MF_INTRIN_SIMD2
template <class T>
METAL_FUNC T
__metal_simd_shuffle_and_fill_up(T data, T filling, ushort delta, ushort modulo) {
  return ::metal::simd_shuffle_and_fill_up(data, filling, delta, modulo);
}
template <class T>
METAL_FUNC T __metal_simd_shuffle_and_fill_down(T data, T filling, ushort delta, ushort modulo) {
  return ::metal::simd_shuffle_and_fill_down(data, filling, delta, modulo);
}
