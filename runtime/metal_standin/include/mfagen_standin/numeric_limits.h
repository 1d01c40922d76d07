// Metal stand-in: metal::numeric_limits<T> and the limit macros of
// <metal_stdlib> (FLT_*, HALF_*, INT_*, INFINITY, NAN, MAXFLOAT, ...).
#pragma once
#include "type_traits.h"

#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define HUGE_VALF __builtin_huge_valf()
#define HUGE_VALH (static_cast<half>(__builtin_huge_valf()))
#define MAXFLOAT 0x1.fffffep+127f
#define MAXHALF (static_cast<half>(0x1.ffcp+15f))

#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_10_EXP 38
#define FLT_MAX_EXP 128
#define FLT_MIN_10_EXP (-37)
#define FLT_MIN_EXP (-125)
#define FLT_RADIX 2
#define FLT_MAX 0x1.fffffep+127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#define FLT_DENORM_MIN 0x1p-149f

#define HALF_DIG 3
#define HALF_MANT_DIG 11
#define HALF_MAX_10_EXP 4
#define HALF_MAX_EXP 16
#define HALF_MIN_10_EXP (-4)
#define HALF_MIN_EXP (-13)
#define HALF_RADIX 2
#define HALF_MAX (static_cast<half>(0x1.ffcp+15f))
#define HALF_MIN (static_cast<half>(0x1p-14f))
#define HALF_EPSILON (static_cast<half>(0x1p-10f))
#define HALF_DENORM_MIN (static_cast<half>(0x1p-24f))

#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define CHAR_MAX 127
#define CHAR_MIN (-128)
#define UCHAR_MAX 255
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 0xffffffffu
#define LONG_MAX 0x7fffffffffffffffl
#define LONG_MIN (-0x7fffffffffffffffl - 1)
#define ULONG_MAX 0xfffffffffffffffful

namespace metal {

enum float_round_style {
  round_indeterminate = -1,
  round_toward_zero = 0,
  round_to_nearest = 1,
  round_toward_infinity = 2,
  round_toward_neg_infinity = 3
};
enum float_denorm_style { denorm_indeterminate = -1, denorm_absent = 0, denorm_present = 1 };

// Unspecialized: is_specialized == false and no value functions (using one is
// a compile error rather than a silent 0).
template <class T>
struct numeric_limits {
  static constexpr bool is_specialized = false;
};
template <class T>
struct numeric_limits<const T> : numeric_limits<T> {};
template <class T>
struct numeric_limits<volatile T> : numeric_limits<T> {};
template <class T>
struct numeric_limits<const volatile T> : numeric_limits<T> {};

template <class T, T Min, T Max, int Digits, int Digits10>
struct __mf_int_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = Min != 0;
  static constexpr bool is_integer = true;
  static constexpr bool is_exact = true;
  static constexpr bool has_infinity = false;
  static constexpr bool has_quiet_NaN = false;
  static constexpr bool has_signaling_NaN = false;
  static constexpr float_denorm_style has_denorm = denorm_absent;
  static constexpr bool has_denorm_loss = false;
  static constexpr float_round_style round_style = round_toward_zero;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = !(Min != 0);
  static constexpr int digits = Digits;
  static constexpr int digits10 = Digits10;
  static constexpr int max_digits10 = 0;
  static constexpr int radix = 2;
  static constexpr int min_exponent = 0;
  static constexpr int min_exponent10 = 0;
  static constexpr int max_exponent = 0;
  static constexpr int max_exponent10 = 0;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;
  static constexpr T min() { return Min; }
  static constexpr T max() { return Max; }
  static constexpr T lowest() { return Min; }
  static constexpr T epsilon() { return 0; }
  static constexpr T round_error() { return 0; }
  static constexpr T infinity() { return 0; }
  static constexpr T quiet_NaN() { return 0; }
  static constexpr T signaling_NaN() { return 0; }
  static constexpr T denorm_min() { return 0; }
};
template <>
struct numeric_limits<bool> : __mf_int_limits<bool, false, true, 1, 0> {};
template <>
struct numeric_limits<char> : __mf_int_limits<char, -128, 127, 7, 2> {};
template <>
struct numeric_limits<signed char> : __mf_int_limits<signed char, -128, 127, 7, 2> {};
template <>
struct numeric_limits<uchar> : __mf_int_limits<uchar, 0, 255, 8, 2> {};
template <>
struct numeric_limits<short> : __mf_int_limits<short, -32768, 32767, 15, 4> {};
template <>
struct numeric_limits<ushort> : __mf_int_limits<ushort, 0, 65535, 16, 4> {};
template <>
struct numeric_limits<int> : __mf_int_limits<int, INT_MIN, INT_MAX, 31, 9> {};
template <>
struct numeric_limits<uint> : __mf_int_limits<uint, 0, UINT_MAX, 32, 9> {};
template <>
struct numeric_limits<long> : __mf_int_limits<long, LONG_MIN, LONG_MAX, 63, 18> {};
template <>
struct numeric_limits<ulong> : __mf_int_limits<ulong, 0, ULONG_MAX, 64, 19> {};

struct __mf_fp_limits_base {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr float_denorm_style has_denorm = denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_iec559 = true;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int radix = 2;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;
};
template <>
struct numeric_limits<float> : __mf_fp_limits_base {
  static constexpr int digits = 24;
  static constexpr int digits10 = 6;
  static constexpr int max_digits10 = 9;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static constexpr float min() { return 0x1p-126f; }
  static constexpr float max() { return 0x1.fffffep+127f; }
  static constexpr float lowest() { return -0x1.fffffep+127f; }
  static constexpr float epsilon() { return 0x1p-23f; }
  static constexpr float round_error() { return 0.5f; }
  static constexpr float infinity() { return __builtin_inff(); }
  static constexpr float quiet_NaN() { return __builtin_nanf(""); }
  static constexpr float signaling_NaN() { return __builtin_nansf(""); }
  static constexpr float denorm_min() { return 0x1p-149f; }
};
template <>
struct numeric_limits<half> : __mf_fp_limits_base {
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static constexpr half min() { return static_cast<half>(0x1p-14f); }
  static constexpr half max() { return static_cast<half>(0x1.ffcp+15f); }
  static constexpr half lowest() { return static_cast<half>(-0x1.ffcp+15f); }
  static constexpr half epsilon() { return static_cast<half>(0x1p-10f); }
  static constexpr half round_error() { return static_cast<half>(0.5f); }
  static constexpr half infinity() { return static_cast<half>(__builtin_inff()); }
  static constexpr half quiet_NaN() { return static_cast<half>(__builtin_nanf("")); }
  static constexpr half signaling_NaN() { return __builtin_bit_cast(half, static_cast<ushort>(0x7d00)); }
  static constexpr half denorm_min() { return static_cast<half>(0x1p-24f); }
};
template <>
struct numeric_limits<bfloat> : __mf_fp_limits_base {
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static constexpr bfloat min() { return bfloat::__mf_from_bits(0x0080); }
  static constexpr bfloat max() { return bfloat::__mf_from_bits(0x7f7f); }
  static constexpr bfloat lowest() { return bfloat::__mf_from_bits(0xff7f); }
  static constexpr bfloat epsilon() { return bfloat::__mf_from_bits(0x3c00); }
  static constexpr bfloat round_error() { return bfloat::__mf_from_bits(0x3f00); }
  static constexpr bfloat infinity() { return bfloat::__mf_from_bits(0x7f80); }
  static constexpr bfloat quiet_NaN() { return bfloat::__mf_from_bits(0x7fc0); }
  static constexpr bfloat signaling_NaN() { return bfloat::__mf_from_bits(0x7fa0); }
  static constexpr bfloat denorm_min() { return bfloat::__mf_from_bits(0x0001); }
};

}  // namespace metal
