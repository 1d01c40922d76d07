#include "quantized_kv.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "dtype_rounding.h"
#include "random_inputs.h"

namespace mfagen::reference {
namespace {

constexpr uint64_t kBlock = 32;

uint64_t block_bytes(KvQuant f) { return f == KvQuant::q8_0 ? 2 + 32 : 2 + 16; }

void check_size(KvQuant f, uint64_t stored, uint64_t rows, uint64_t values) {
  const uint64_t want = rows * quantized_row_bytes(f, values);
  if (stored != want)
    throw std::invalid_argument(std::string(to_string(f)) + ": " + std::to_string(rows) + " rows of " +
                                std::to_string(values) + " values take " + std::to_string(want) + " bytes, not " +
                                std::to_string(stored));
}

uint16_t read_u16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }  // little-endian, as Apple GPUs store it

void write_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v & 0xFF);
  p[1] = uint8_t(v >> 8);
}

// The values of the 127 non-NaN fp8 magnitude codes, computed once: the
// search below runs for every element of a quantized cache (8 M of them at
// 32K keys), and recomputing each code's value there made it most of a
// long-context test's time.
const std::array<double, 0x7F>& fp8_magnitudes() {
  static const std::array<double, 0x7F> values = [] {
    std::array<double, 0x7F> v{};
    for (uint8_t code = 0; code < 0x7F; ++code) v[code] = fp8_e4m3_value(code);
    return v;
  }();
  return values;
}

// The fp8 code nearest to x (ties to the even code), saturating at +-448.
uint8_t nearest_fp8(double x) {
  if (std::isnan(x)) return 0x7F;
  const std::array<double, 0x7F>& magnitudes = fp8_magnitudes();
  uint8_t best = 0;
  double best_error = std::numeric_limits<double>::infinity();
  for (uint8_t code = 0; code < 0x7F; ++code) {  // magnitudes; 0x7F is NaN
    const double error = std::fabs(std::fabs(x) - magnitudes[code]);
    if (error < best_error || (error == best_error && (code & 1) == 0)) {
      best = code;
      best_error = error;
    }
  }
  return uint8_t(best | (x < 0 ? 0x80 : 0));
}

}  // namespace

std::string_view to_string(KvQuant f) {
  switch (f) {
    case KvQuant::q8_0: return "q8_0";
    case KvQuant::q4_0: return "q4_0";
    case KvQuant::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

uint64_t quantized_row_bytes(KvQuant f, uint64_t values) {
  if (f == KvQuant::fp8_e4m3) return values;
  if (values % kBlock != 0)
    throw std::invalid_argument(std::string(to_string(f)) + " stores blocks of 32 values: a row of " +
                                std::to_string(values) + " values is not whole blocks");
  return values / kBlock * block_bytes(f);
}

double fp8_e4m3_value(uint8_t code) {
  const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  const double sign = code & 0x80 ? -1.0 : 1.0;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<double>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(mantissa, -9);  // subnormal: mantissa/8 * 2^(1-7)
  return sign * std::ldexp(8 + mantissa, exponent - 10);     // (1 + mantissa/8) * 2^(exponent-7)
}

std::vector<double> dequantize_rows(KvQuant f, std::span<const uint8_t> stored, uint64_t rows, uint64_t values,
                                    double scale) {
  check_size(f, stored.size(), rows, values);
  std::vector<double> out(rows * values);
  if (f == KvQuant::fp8_e4m3) {
    for (uint64_t i = 0; i < out.size(); ++i) out[i] = fp8_e4m3_value(stored[i]) * scale;
    return out;
  }
  const uint64_t blocks = rows * values / kBlock;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = stored.data() + b * block_bytes(f);
    const double d = half_from_bits(read_u16(block));
    const uint8_t* codes = block + 2;
    for (uint64_t e = 0; e < kBlock; ++e) {
      double code;
      if (f == KvQuant::q8_0)
        code = double(int8_t(codes[e]));
      else
        code = double(e < 16 ? codes[e] & 0xF : codes[e - 16] >> 4) - 8.0;
      out[b * kBlock + e] = d * code;
    }
  }
  return out;
}

std::vector<uint8_t> quantize_rows(KvQuant f, std::span<const double> values, uint64_t rows, uint64_t row_values,
                                   double scale) {
  if (values.size() != rows * row_values)
    throw std::invalid_argument("quantize_rows: " + std::to_string(values.size()) + " values are not " +
                                std::to_string(rows) + " rows of " + std::to_string(row_values));
  std::vector<uint8_t> stored(rows * quantized_row_bytes(f, row_values));
  if (f == KvQuant::fp8_e4m3) {
    for (uint64_t i = 0; i < values.size(); ++i) stored[i] = nearest_fp8(values[i] / scale);
    return stored;
  }
  const uint64_t blocks = values.size() / kBlock;
  for (uint64_t b = 0; b < blocks; ++b) {
    const double* x = values.data() + b * kBlock;
    uint8_t* block = stored.data() + b * block_bytes(f);
    uint8_t* codes = block + 2;
    if (f == KvQuant::q8_0) {
      double amax = 0;
      for (uint64_t e = 0; e < kBlock; ++e) amax = std::max(amax, std::fabs(x[e]));
      const double d = amax / 127;
      write_u16(block, half_bits(float(d)));
      for (uint64_t e = 0; e < kBlock; ++e) codes[e] = uint8_t(int8_t(d == 0 ? 0 : std::lround(x[e] / d)));
    } else {
      double max = 0;  // the value of largest magnitude, with its sign
      for (uint64_t e = 0; e < kBlock; ++e)
        if (std::fabs(x[e]) > std::fabs(max)) max = x[e];
      const double d = max / -8;
      const double id = d == 0 ? 0 : 1 / d;
      write_u16(block, half_bits(float(d)));
      for (uint64_t e = 0; e < 16; ++e) {
        const auto code = [&](uint64_t i) { return uint8_t(std::min(15, int(int8_t(x[i] * id + 8.5)))); };
        codes[e] = uint8_t(code(e) | code(e + 16) << 4);
      }
    }
  }
  return stored;
}

std::vector<uint8_t> quantize_rows_float32(KvQuant f, std::span<const float> values, uint64_t rows,
                                           uint64_t row_values, float scale) {
  if (values.size() != rows * row_values)
    throw std::invalid_argument("quantize_rows_float32: " + std::to_string(values.size()) + " values are not " +
                                std::to_string(rows) + " rows of " + std::to_string(row_values));
  std::vector<uint8_t> stored(rows * quantized_row_bytes(f, row_values));
  if (f == KvQuant::fp8_e4m3) {
    for (uint64_t i = 0; i < values.size(); ++i) {
      const float q = values[i] / scale;
      const uint8_t sign = std::signbit(q) ? 0x80 : 0;
      stored[i] = uint8_t((std::isnan(q) ? 0x7F : nearest_fp8(std::fabs(double(q)))) | sign);
    }
    return stored;
  }
  for (uint64_t b = 0; b < values.size() / kBlock; ++b) {
    const float* x = values.data() + b * kBlock;
    uint8_t* block = stored.data() + b * block_bytes(f);
    uint8_t* codes = block + 2;
    if (f == KvQuant::q8_0) {  // quantize_row_q8_0_ref
      float amax = 0.0f;
      for (uint64_t e = 0; e < kBlock; ++e) amax = std::max(amax, std::fabs(x[e]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      write_u16(block, half_bits(d));
      for (uint64_t e = 0; e < kBlock; ++e) codes[e] = uint8_t(int8_t(std::round(x[e] * id)));
      continue;
    }
    float amax = 0.0f, max = 0.0f;  // quantize_row_q4_0_ref: the first value of largest magnitude
    for (uint64_t e = 0; e < kBlock; ++e)
      if (amax < std::fabs(x[e])) {
        amax = std::fabs(x[e]);
        max = x[e];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    write_u16(block, half_bits(d));
    const auto code = [&](uint64_t e) {
      const float scaled = x[e] * id;
      return uint8_t(std::min(15, int(int8_t(scaled + 8.5f))));
    };
    for (uint64_t e = 0; e < 16; ++e) codes[e] = uint8_t(code(e) | code(e + 16) << 4);
  }
  return stored;
}

StoredRows random_stored_rows(KvQuant f, uint64_t rows, uint64_t row_values, uint64_t seed, double stddev,
                              double scale) {
  const std::vector<double> normal = random_tensor(rows * row_values, seed, ElementType::float32, stddev);
  StoredRows r;
  r.stored = quantize_rows(f, normal, rows, row_values, scale);
  r.values = dequantize_rows(f, r.stored, rows, row_values, scale);
  return r;
}

std::vector<double> rounded_to(std::vector<double> values, ElementType type) {
  for (double& x : values) x = round_to(type, x);
  return values;
}

}  // namespace mfagen::reference
