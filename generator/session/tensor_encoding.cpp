#include "session/tensor_encoding.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "session/call_error.h"

namespace mfagen::session {
namespace {

// Rounds x to a binary format with `digits` significand bits (including the
// implicit one), smallest normal exponent `min_exponent` and largest finite
// value `max_finite`; subnormals keep the spacing of the smallest binade.
// std::nearbyint rounds half to even in the default rounding mode.
double round_to_format(double x, int digits, int min_exponent, double max_finite) {
  if (!std::isfinite(x) || x == 0) return x;
  const int exponent = std::max(std::ilogb(x), min_exponent);
  const double scaled = std::ldexp(x, digits - 1 - exponent);
  const double rounded = std::ldexp(std::nearbyint(scaled), exponent - (digits - 1));
  if (std::fabs(rounded) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return rounded;
}

uint16_t half_bits(float exact) {
  _Float16 h = static_cast<_Float16>(exact);  // exact: the value is representable
  return std::bit_cast<uint16_t>(h);
}

uint16_t bfloat_bits(float exact) {
  uint32_t bits = std::bit_cast<uint32_t>(exact);
  if (std::isnan(exact)) return uint16_t((bits >> 16) | 0x40);  // keep it a quiet NaN
  return uint16_t(bits >> 16);  // exact: the low half is zero
}

}  // namespace

float round_to_element(spec::DType type, double x) {
  switch (type) {
    case spec::DType::float32: return static_cast<float>(x);
    case spec::DType::float16: return static_cast<float>(round_to_format(x, 11, -14, 65504.0));
    case spec::DType::bfloat16: return static_cast<float>(round_to_format(x, 8, -126, 0x1.fep127));
  }
  return static_cast<float>(x);
}

std::vector<double> npy_values(const io::NpyArray& array, const char* what) {
  std::vector<double> out(array.element_count());
  if (array.dtype == "<f8") {
    std::memcpy(out.data(), array.data.data(), out.size() * 8);
  } else if (array.dtype == "<f4") {
    for (size_t i = 0; i < out.size(); ++i) {
      float f;
      std::memcpy(&f, &array.data[i * 4], 4);
      out[i] = f;
    }
  } else if (array.dtype == "<f2") {
    for (size_t i = 0; i < out.size(); ++i) {
      _Float16 h;
      std::memcpy(&h, &array.data[i * 2], 2);
      out[i] = static_cast<double>(h);
    }
  } else {
    throw CallError(fmt::format("{}: dtype {} is not supported; expected <f4, <f2 or <f8", what, array.dtype));
  }
  return out;
}

std::vector<std::byte> encode_elements(const std::vector<double>& values, spec::DType type) {
  const size_t size = spec::dtype_bytes(type);
  std::vector<std::byte> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = static_cast<float>(values[i]);
    if (type == spec::DType::float32) {
      std::memcpy(&bytes[i * 4], &x, 4);
    } else {
      const uint16_t b = type == spec::DType::float16 ? half_bits(x) : bfloat_bits(x);
      std::memcpy(&bytes[i * 2], &b, 2);
    }
  }
  return bytes;
}

std::vector<float> decode_elements(const std::vector<std::byte>& bytes, spec::DType type) {
  const size_t size = spec::dtype_bytes(type);
  std::vector<float> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i) {
    if (type == spec::DType::float32) {
      std::memcpy(&out[i], &bytes[i * 4], 4);
    } else {
      uint16_t b;
      std::memcpy(&b, &bytes[i * 2], 2);
      out[i] = type == spec::DType::float16 ? static_cast<float>(std::bit_cast<_Float16>(b))
                                            : std::bit_cast<float>(uint32_t(b) << 16);
    }
  }
  return out;
}

}  // namespace mfagen::session
