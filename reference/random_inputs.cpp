#include "random_inputs.h"

#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

namespace mfagen::reference {

std::vector<double> random_tensor(uint64_t count, uint64_t seed, ElementType type, double stddev) {
  std::mt19937_64 engine(seed);
  // 53 random bits -> a double in [0, 1), every value exactly representable.
  auto uniform = [&engine] { return static_cast<double>(engine() >> 11) * 0x1p-53; };
  std::vector<double> values;
  values.reserve(count);
  while (values.size() < count) {
    // Box-Muller: two independent normals from two uniforms. 1 - u lies in
    // (0, 1], so the log is finite.
    double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    double angle = 2.0 * std::numbers::pi * uniform();
    values.push_back(round_to(type, stddev * radius * std::cos(angle)));
    if (values.size() < count) values.push_back(round_to(type, stddev * radius * std::sin(angle)));
  }
  return values;
}

std::vector<float> to_float(const std::vector<double>& values) {
  std::vector<float> result(values.size());
  for (size_t n = 0; n < values.size(); ++n) result[n] = static_cast<float>(values[n]);
  return result;
}

std::vector<uint16_t> to_bits(const std::vector<double>& values, ElementType type) {
  if (type == ElementType::float32) throw std::invalid_argument("to_bits: float32 has no 16-bit encoding");
  std::vector<uint16_t> result(values.size());
  for (size_t n = 0; n < values.size(); ++n) {
    // Round from the double directly so a value between floats is not rounded twice.
    float rounded = round_to(type, values[n]);
    result[n] = type == ElementType::float16 ? half_bits(rounded) : bfloat_bits(rounded);
  }
  return result;
}

}  // namespace mfagen::reference
