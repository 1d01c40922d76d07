// The cost model's output for one kernel call on one chip: a prediction,
// never a measurement (DESIGN.md section 14; constants and their sources in
// generator/profile/chips/ and docs/cost_model.md).
#pragma once

#include <string>
#include <vector>

namespace mfagen::profile {

// Which resource limits a launch (the largest of its time bounds).
enum class Bound { compute, transcendental, matrix, device_memory, threadgroup_memory, latency, tensor };
std::string_view to_string(Bound b);

struct LaunchPrediction {
  std::string kernel;
  double seconds = 0;  // predicted: the largest bound, with the last wave's tail
  // Each bound alone, in seconds for the whole launch.
  double compute_seconds = 0;             // ALU issue (FP32/FP16/integer/memory instructions), incl. tail
  double matrix_seconds = 0;              // matrix work alone, incl. tail: simdgroup_matrix MMAs and matmul2d
                                          // blocks on the FMA pipes, and matmul2d blocks on the tensor pipe
  double transcendental_seconds = 0;      // the transcendental pipe, incl. tail
  double tensor_seconds = 0;              // the tensor pipe (Neural Accelerators, M5), incl. tail; 0 elsewhere
  double device_memory_seconds = 0;       // DRAM (compulsory bytes) and cache (requested bytes)
  double threadgroup_memory_seconds = 0;  // threadgroup memory bandwidth
  Bound bound = Bound::compute;
  uint32_t threadgroups_per_core = 0;   // resident at once (occupancy)
  std::string occupancy_limit;          // what limits residency: "threadgroup memory", "registers", "threads"
  double simdgroups_per_core = 0;       // resident
  double latency_hiding = 1;            // fraction of the ALU issue rate reached at this occupancy (<= 1)
  double mma_latency_hiding = 1;        // fraction of the MMA rate reached at this occupancy (<= 1)
  double waves = 0;                     // threadgroups / (cores * threadgroups_per_core)
};

struct Prediction {
  std::string chip;  // display name, e.g. "M3 Max"
  double seconds = 0;
  double tflops = 0;          // useful FLOPs / seconds / 1e12
  double utilization = 0;     // tflops / the chip's peak for the kernel's math (FP16, FP32, Neural Accelerators), 0..1
  double bandwidth_gbs = 0;   // compulsory device bytes / seconds / 1e9
  double bandwidth_utilization = 0;  // bandwidth_gbs / the chip's DRAM bandwidth
  Bound bound = Bound::compute;       // of the launch that takes longest
  std::vector<LaunchPrediction> launches;
};

}  // namespace mfagen::profile
