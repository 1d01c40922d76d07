#include "profile/latency_hiding.h"

#include <algorithm>
#include <array>
#include <utility>

namespace mfagen::profile {

double alu_latency_hiding(const Chip& c, double simdgroups) {
  // (simdgroups per core, cycles per FFMA32 at ILP 4), metal-benchmarks README
  // @ dc2adc6, 'ALU Bottlenecks'; the saturated cost is the 88-simd figure.
  constexpr double kSaturated = 1.02;
  const std::array<std::pair<double, double>, 3> kTable = {
      {{4, 2.75}, {8, 1.60}, {std::max(8.0, c.saturation_simdgroups_per_core), kSaturated}}};
  if (simdgroups <= 0) return 0;
  if (simdgroups >= kTable.back().first) return 1;
  if (simdgroups <= kTable.front().first) return kSaturated / kTable.front().second * simdgroups / kTable.front().first;
  for (size_t i = 1; i < kTable.size(); ++i) {
    const auto [s0, c0] = kTable[i - 1];
    const auto [s1, c1] = kTable[i];
    if (simdgroups > s1) continue;
    const double t = (simdgroups - s0) / (s1 - s0);
    return kSaturated / (c0 + t * (c1 - c0));
  }
  return 1;
}

double mma_latency_hiding(const Chip& c, double simdgroups, double chains) {
  const double per_scheduler = simdgroups / c.schedulers_per_core;
  const double in_flight = per_scheduler * std::max(1.0, chains);
  return std::min(1.0, in_flight * c.mma_cycles_f32 / c.mma_latency_cycles);
}

uint32_t register_limited_threads_per_core(const Chip& c, double registers) {
  // Half-registers (16-bit) -> threads per core.
  constexpr std::array<std::pair<double, uint32_t>, 10> kTable = {
      {{104, 1024}, {112, 896}, {128, 832}, {136, 768}, {144, 704},
       {160, 640}, {184, 576}, {208, 512}, {232, 448}, {256, 384}}};
  const double half_registers = 2 * std::min(registers, 128.0);
  if (half_registers <= kTable.front().first)
    return static_cast<uint32_t>(c.register_file_bytes_per_core / (4 * std::max(1.0, registers)));
  for (const auto& [max_half_registers, threads] : kTable)
    if (half_registers <= max_half_registers) return threads;
  return kTable.back().second;
}

}  // namespace mfagen::profile
