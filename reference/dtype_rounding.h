// Rounding float64 values to the element types kernels store (float16,
// bfloat16, float32), and the raw 16-bit encodings of half and bfloat buffers.
// Written from the IEEE 754 definitions, independent of any kernel code.
#pragma once

#include <cstdint>
#include <string_view>

namespace mfagen::reference {

enum class ElementType { float16, bfloat16, float32 };

// "float16", "bfloat16" or "float32" (the spec's dtype names).
std::string_view to_string(ElementType type);

// x rounded to nearest, ties to even, into `type`; the result is exactly
// representable as a float. Overflow gives +-inf, NaN stays NaN, tiny values
// round into the subnormals (and to signed zero). For the 16-bit types this is
// the correctly rounded value of the double itself (no intermediate float), so
// it equals rounding (float)x except in the rare case where x -> float lands
// exactly on a 16-bit tie.
float round_to(ElementType type, double x);

// Encodings. The *_bits functions round a float to nearest even (same results
// as round_to for float inputs); NaN becomes a quiet NaN of the same sign.
uint16_t half_bits(float x);
uint16_t bfloat_bits(float x);
float half_from_bits(uint16_t bits);
float bfloat_from_bits(uint16_t bits);

}  // namespace mfagen::reference
