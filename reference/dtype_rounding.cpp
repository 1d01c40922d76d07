#include "dtype_rounding.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <limits>

namespace mfagen::reference {

std::string_view to_string(ElementType type) {
  switch (type) {
    case ElementType::float16: return "float16";
    case ElementType::bfloat16: return "bfloat16";
    case ElementType::float32: return "float32";
  }
  return "?";
}

namespace {

// A binary floating-point format: `precision` significand bits (implicit bit
// included), smallest normal exponent, largest finite value.
struct Format {
  int precision;
  int min_exponent;
  double max_finite;
};
constexpr Format kHalf = {11, -14, 0x1.ffcp15};     // 65504
constexpr Format kBfloat = {8, -126, 0x1.fep127};  // (2 - 2^-7) * 2^127

// 2^e for a normal double's exponent range, from its bits (exact).
double power_of_two(int e) { return std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52); }

// Round x to `format`, nearest with ties to even, in plain double arithmetic
// where every step is exact: scale by a power of two so that one unit in the
// last place of the target becomes 1, round that to an integer, scale back.
// (The exponent is read from the double's bits and the power of two built
// from them rather than with frexp, ldexp and fmod: the same values, but
// those calls were a large share of the test suite's reference time.)
double round_to_format(double x, const Format& format) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  double magnitude = std::fabs(x);
  // magnitude = 1.f * 2^e for a normal double; a subnormal double (biased
  // exponent 0) is far below every format's smallest normal either way.
  const int biased = static_cast<int>((std::bit_cast<uint64_t>(magnitude) >> 52) & 0x7ff);
  // Below the smallest normal the spacing stays that of the subnormals.
  int exponent = std::max(biased - 1023, format.min_exponent);
  double ulp = power_of_two(exponent - (format.precision - 1));
  double scaled = magnitude / ulp;  // exact: division by a power of two
  double integer = std::floor(scaled);  // below 2^precision: an exact small integer
  double fraction = scaled - integer;  // exact
  const bool odd = (static_cast<int64_t>(integer) & 1) != 0;
  if (fraction > 0.5 || (fraction == 0.5 && odd)) integer += 1.0;
  double rounded = integer * ulp;
  // A rounded value past the largest finite (including a tie rounding up to
  // the next power of two) overflows to infinity, as IEEE 754 prescribes.
  if (rounded > format.max_finite) rounded = std::numeric_limits<double>::infinity();
  return std::copysign(rounded, x);
}

}  // namespace

float round_to(ElementType type, double x) {
  switch (type) {
    case ElementType::float16: return static_cast<float>(round_to_format(x, kHalf));
    case ElementType::bfloat16: return static_cast<float>(round_to_format(x, kBfloat));
    case ElementType::float32: return static_cast<float>(x);  // the default FP mode rounds to nearest even
  }
  return std::numeric_limits<float>::quiet_NaN();
}

// float -> half from the float's bits. A second, independent derivation of the
// same rounding as round_to_format; the tests check that both agree.
uint16_t half_bits(float x) {
  uint32_t f = std::bit_cast<uint32_t>(x);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  uint32_t magnitude = f & 0x7fffffff;
  if (magnitude > 0x7f800000) return sign | 0x7e00;  // NaN -> quiet NaN
  if (magnitude >= 0x477ff000) return sign | 0x7c00;  // >= 65520 (tie above 65504 goes up): inf
  if (magnitude >= 0x38800000) {
    // Normal half: rebias the exponent (127 -> 15), then drop 13 mantissa bits
    // with round-to-nearest-even: add 0xfff plus the bit that will become the
    // last kept bit. A carry out of the mantissa correctly bumps the exponent.
    uint32_t rebiased = magnitude - ((127u - 15u) << 23);
    uint32_t rounded = rebiased + 0xfff + ((rebiased >> 13) & 1);
    return sign | static_cast<uint16_t>(rounded >> 13);
  }
  // Subnormal half: the value in units of 2^-24 is mantissa * 2^(exponent - 150 + 24).
  uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return sign;  // below 2^-25: rounds to zero (2^-25 itself is exponent 102)
  uint32_t mantissa = (magnitude & 0x7fffff) | 0x800000;
  uint32_t shift = 126 - exponent;  // 14..24
  uint32_t kept = mantissa >> shift;
  uint32_t dropped = mantissa & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (dropped > halfway || (dropped == halfway && (kept & 1))) kept += 1;  // 1024 is the smallest normal: still right
  return sign | static_cast<uint16_t>(kept);
}

uint16_t bfloat_bits(float x) {
  uint32_t f = std::bit_cast<uint32_t>(x);
  if ((f & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((f >> 16) | 0x0040);  // quiet NaN
  // bfloat16 is the top half of a float: drop 16 bits, round to nearest even.
  // Overflow carries into the exponent and lands exactly on infinity.
  uint32_t rounded = f + 0x7fff + ((f >> 16) & 1);
  return static_cast<uint16_t>(rounded >> 16);
}

float half_from_bits(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0x1f) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  } else {
    magnitude = std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
  }
  return (bits & 0x8000) ? -magnitude : magnitude;
}

float bfloat_from_bits(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

}  // namespace mfagen::reference
