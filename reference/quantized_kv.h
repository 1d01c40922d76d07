// Quantized k and v for the reference (DESIGN.md section 13): the formats'
// definitions written plainly, independent of any kernel code. The reference
// dequantizes stored rows exactly as the format says and solves the float64
// problem; the quantizers make realistic stored rows for tests (llama.cpp's
// rounding for q8_0 and q4_0, nearest value for fp8).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dtype_rounding.h"

namespace mfagen::reference {

enum class KvQuant { q8_0, q4_0, fp8_e4m3 };

// "q8_0", "q4_0", "fp8_e4m3" (the spec's kv_dtype names).
std::string_view to_string(KvQuant format);

// Bytes of one stored row of `values` values: q8_0 34 and q4_0 18 per block
// of 32 (values must be a multiple of 32, else std::invalid_argument), fp8 one
// per value.
uint64_t quantized_row_bytes(KvQuant format, uint64_t values);

// The exact value of an fp8 E4M3FN code (bias 7, 3 mantissa bits, no
// infinities; S.1111.111 is NaN).
double fp8_e4m3_value(uint8_t code);

// `rows` stored rows of `values` values each (rows * quantized_row_bytes
// bytes, else std::invalid_argument) as float64: q8_0 x = d * q, q4_0
// x = d * (q - 8) with value e < 16 in the low nibble of byte e and e >= 16 in
// the high nibble of byte e - 16, fp8 x = value * scale (scale unused for the
// block formats).
std::vector<double> dequantize_rows(KvQuant format, std::span<const uint8_t> stored, uint64_t rows, uint64_t values,
                                    double scale = 1.0);

// Values (rows x values, row-major) stored in `format`: q8_0 d = amax / 127
// and q = round(x / d); q4_0 d = m / -8 for the value m of largest magnitude
// and q = min(15, trunc(x / d + 8.5)) (llama.cpp's quantize_row_q4_0_ref); fp8
// the nearest code to x / scale (ties to the even code, saturating at 448).
std::vector<uint8_t> quantize_rows(KvQuant format, std::span<const double> values, uint64_t rows,
                                   uint64_t row_values, double scale = 1.0);

// Values stored as a cache writer stores them (spec kind cache_append), in
// float32 arithmetic, so that a kernel's stored bytes can be compared bit for
// bit: q8_0 and q4_0 as llama.cpp's quantize_row_q8_0_ref and
// quantize_row_q4_0_ref (d = amax / 127 or m / -8 with m the first value of
// largest magnitude, id = 1 / d, q = roundf(x * id) or min(15, (int8)(x * id
// + 8.5f)), d stored as float16); fp8 the code nearest to the float32
// quotient x / scale (ties to the even code, saturating at 448, the sign kept
// for zeros and NaN).
std::vector<uint8_t> quantize_rows_float32(KvQuant format, std::span<const float> values, uint64_t rows,
                                           uint64_t row_values, float scale = 1.0f);

// `rows` x `row_values` normal(0, stddev) values (random_tensor with `seed`,
// in float32) stored in `format` by quantize_rows, and the values the stored
// rows hold: the quantized k or v of a test or selftest case.
struct StoredRows {
  std::vector<uint8_t> stored;
  std::vector<double> values;
};
StoredRows random_stored_rows(KvQuant format, uint64_t rows, uint64_t row_values, uint64_t seed, double stddev,
                              double scale = 1.0);

// k and v rounded to `type`: what a naive implementation that dequantizes
// into the input dtype computes with, the yardstick of the tolerance rule for
// quantized caches (naive_attention_in_dtype takes inputs in its type).
std::vector<double> rounded_to(std::vector<double> values, ElementType type);

}  // namespace mfagen::reference
