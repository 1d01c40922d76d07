// Seeded random inputs for kernel tests, identical on every platform, and the
// conversions to the buffers kernels read.
#pragma once

#include <cstdint>
#include <vector>

#include "dtype_rounding.h"

namespace mfagen::reference {

// `count` normal(0, stddev) values, each rounded to `type`. The generator is
// std::mt19937_64 (fully specified by the standard) with our own Box-Muller
// transform, since std::normal_distribution differs between standard libraries.
std::vector<double> random_tensor(uint64_t count, uint64_t seed, ElementType type, double stddev = 1.0);

// Narrowing to float; exact for values already rounded to any ElementType.
std::vector<float> to_float(const std::vector<double>& values);

// Raw 16-bit encodings for float16/bfloat16 buffers (each value rounded to
// nearest even first). Throws std::invalid_argument for float32.
std::vector<uint16_t> to_bits(const std::vector<double>& values, ElementType type);

}  // namespace mfagen::reference
