// Shared by the cpu backend's kernel tests (tests/cpu/*_test.cpp): compiles
// the hand-written kernels next to this file, binds host vectors as buffers,
// and provides reference arithmetic for half and bfloat that does not use the
// code under test (plain bit manipulation and float64).
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "mfagen/cpu/backend.h"

namespace mfagen::cputest {

namespace cpu = mfagen::cpu;
using cpu::Dim3;

inline std::filesystem::path kernel_file(std::string_view name) {
  return std::filesystem::path(MFAGEN_TEST_DATA_DIR) / "kernels" / name;
}

inline std::shared_ptr<const cpu::Module> compile_kernel(std::string_view name,
                                                         std::vector<std::string> defines = {},
                                                         bool instrument = true) {
  cpu::CompileOptions options;
  options.defines = std::move(defines);
  options.instrument = instrument;
  return cpu::compile_file(kernel_file(name), options);
}

template <class T>
cpu::BufferBinding bind(uint32_t index, std::vector<T>& values) {
  return cpu::BufferBinding{index, std::as_writable_bytes(std::span(values))};
}

template <class T>
cpu::BufferBinding bind_scalar(uint32_t index, T& value) {
  return cpu::BufferBinding{index, std::as_writable_bytes(std::span(&value, 1))};
}

inline cpu::LaunchResult run(const cpu::Module& module, std::string_view entry, Dim3 threadgroups,
                             Dim3 threads_per_threadgroup, std::vector<cpu::BufferBinding> buffers,
                             std::map<uint32_t, uint64_t> threadgroup_bytes = {}) {
  cpu::LaunchOptions options;
  options.threadgroups = threadgroups;
  options.threads_per_threadgroup = threads_per_threadgroup;
  options.buffers = std::move(buffers);
  options.threadgroup_bytes = std::move(threadgroup_bytes);
  return cpu::launch(module, entry, options);
}

inline std::string describe(const cpu::LaunchResult& result) {
  std::ostringstream out;
  out << result.findings_total << " detector finding(s)";
  for (const cpu::Finding& f : result.findings) out << "\n  " << f.to_string();
  return out.str();
}

// EXPECT_TRUE(IsClean(result)) prints every finding when it fails.
inline ::testing::AssertionResult IsClean(const cpu::LaunchResult& result) {
  if (result.clean()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(result);
}

// 1-based number of the first line of `file` that contains `marker`.
inline int line_of(const std::filesystem::path& file, std::string_view marker) {
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return n;
  ADD_FAILURE() << "marker '" << marker << "' not found in " << file;
  return -1;
}

// ---- reference number formats (independent of the stand-in) ----

inline uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
inline float float_from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// Rounds x to the nearest value with `precision` significant bits (incl. the
// implicit one) and minimum normal exponent `emin`, ties to even; values
// beyond `max_finite` after rounding become infinities.
inline double round_to_format(double x, int precision, int emin, double max_finite) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e = std::max(std::ilogb(x), emin);
  double ulp = std::ldexp(1.0, e - (precision - 1));
  double r = std::nearbyint(x / ulp) * ulp;  // default rounding mode: ties to even
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

constexpr double kHalfMax = 65504.0;
inline const double kBfloatMax = std::ldexp(255.0, 127 - 7);  // 0x7F7F

inline double round_half(double x) { return round_to_format(x, 11, -14, kHalfMax); }
inline double round_bfloat(double x) { return round_to_format(x, 8, -126, kBfloatMax); }

inline double half_to_double(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0x1f)
    return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(double(mantissa), -24);
  return sign * std::ldexp(double(1024 + mantissa), exponent - 25);
}

inline double bfloat_to_double(uint16_t b) { return float_from_bits(uint32_t(b) << 16); }

// Bits of a value that is exactly representable as a half (or an infinity).
inline uint16_t half_bits_exact(double v) {
  if (std::isnan(v)) return 0x7e00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) return sign | uint16_t(a * std::ldexp(1.0, 24));
  const int e = std::ilogb(a);
  const uint16_t mantissa = uint16_t((a * std::ldexp(1.0, -e) - 1.0) * 1024.0);
  return sign | uint16_t((e + 15) << 10) | mantissa;
}

inline uint16_t bfloat_bits_exact(double v) {
  if (std::isnan(v)) return 0x7fc0;
  return uint16_t(float_bits(float(v)) >> 16);
}

inline uint16_t to_half_bits(double x) { return half_bits_exact(round_half(x)); }
inline uint16_t to_bfloat_bits(double x) { return bfloat_bits_exact(round_bfloat(x)); }

inline bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
inline bool bfloat_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

}  // namespace mfagen::cputest
