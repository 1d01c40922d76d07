// One Apple GPU as the cost model sees it (DESIGN.md section 14): the
// constants of generator/profile/chips/<stem>.json, each with the public
// source it comes from or the reason it is an assumption. The tables are
// embedded at build time (chip_tables.cpp.in) and parsed once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::profile {

// Where one constant comes from.
struct Citation {
  std::string source;       // document or URL, or why the value was chosen
  bool assumption = false;  // true: not measured or published for this chip
};

struct Chip {
  std::string name;    // display name, e.g. "M3 Max"
  std::string family;  // Metal GPU family, e.g. "apple9"
  std::string notes;
  std::string file;  // the table's file name, e.g. "m3_max.json"

  // Throughputs are per simdgroup instruction, in cycles a scheduler is busy.
  double gpu_cores = 0;
  double clock_ghz = 0;
  double fp32_lanes_per_core_per_cycle = 0;  // FFMA lanes per core
  double fp16_rate = 0;                      // FP16 FMA rate relative to FP32
  double schedulers_per_core = 0;
  double mma_cycles_f16 = 0;  // simdgroup 8x8x8 multiply-accumulate, half operands
  double mma_cycles_bf16 = 0;
  double mma_cycles_f32 = 0;
  double mma_latency_cycles = 0;  // issue to result of one MMA: latency hiding needs throughput/latency in flight
  double transcendental_cycles = 0;  // exp2 / log2
  double tanh_cycles = 0;
  double rsqrt_cycles = 0;
  double reciprocal_cycles = 0;
  double divide_cycles = 0;
  double sqrt_cycles = 0;
  double int_mul_cycles = 0;
  double int_divide_cycles = 0;
  double bf16_widen_cycles = 0;  // bfloat -> float: a shift without bfloat hardware (Apple7/8), free after
  double int_fp16_coissue = 0;   // 1: integer and FP16 instructions issue beside FP32 (Apple9+), 0: one stream
  double dram_bandwidth_gbs = 0;
  double cache_bandwidth_gbs = 0;  // re-read bytes that hit the GPU L2 / system-level cache
  double l1_latency_ns = 0;        // a device load that hits the core's L1
  double l2_latency_ns = 0;        // a device load served by the GPU's L2
  double dram_latency_ns = 0;      // a device load served by DRAM
  double threadgroup_memory_bytes_per_core = 0;
  double threadgroup_bandwidth_bytes_per_cycle_per_core = 0;
  double max_threadgroup_memory_per_threadgroup = 0;
  double register_file_bytes_per_core = 0;
  double max_registers_per_thread = 0;  // a kernel needing more spills (occupancy counts at most this)
  double max_threads_per_core = 0;
  double saturation_simdgroups_per_core = 0;  // resident simdgroups that saturate the ALUs
  double dynamic_caching = 0;  // 1: registers and threadgroup memory share one on-chip pool (Apple9+); 0: static
  double barrier_cycles = 0;                  // per threadgroup_barrier per simdgroup
  double simd_shuffle_cycles = 0;
  double simd_reduce_cycles = 0;
  // Neural Accelerators (Metal 4 TensorOps, the "tensor pipe"): matmul2d
  // multiply-add throughput per GPU core per cycle, 2 per multiply-add. Only
  // chips with accelerators (M5, apple10) have these fields; 0 elsewhere,
  // where matmul2d runs on the shader ALUs like simdgroup_matrix MMAs.
  double tensor_flops_per_core_per_cycle_f16 = 0;  // half or bfloat operands
  double tensor_flops_per_core_per_cycle_i8 = 0;   // 8-bit integer operands (integer operations)

  std::map<std::string, Citation, std::less<>> citations;  // by field name; every field present has one

  bool has_neural_accelerators() const { return tensor_flops_per_core_per_cycle_f16 > 0; }
  const Citation& citation(std::string_view field) const;  // throws std::out_of_range
};

// The numeric fields of a table, in file order: name, member, what it means.
// The share of a chip's advertised DRAM bandwidth that a GPU streaming read
// sustains: the median of three public measurements, each of a plain stream
// on the GPU against the chip's advertised figure (docs/cost_model.md, [BW]):
// M1 Ultra 680 of 800 GB/s (0.85), M5 Max 530 of 614 (0.86), M5 122 of
// 153.6 (0.79). No GPU streams at its advertised bandwidth; the model had
// charged compulsory bytes at 100% of it. Every kernel's DRAM bound uses it.
inline constexpr double kDramStreamingFraction = 0.85;

// GB/s a bandwidth-bound launch can reach on `chip` (the DRAM bound's rate).
inline double streaming_dram_bandwidth_gbs(const Chip& chip) {
  return kDramStreamingFraction * chip.dram_bandwidth_gbs;
}

struct ChipField {
  std::string_view name;
  double Chip::*member;
  std::string_view meaning;
  // Optional fields are the Neural Accelerator group (tensor_*): a table has
  // all of them or none. Absent, the member stays 0 and has no citation.
  bool optional = false;
  // Flags and free costs may be 0; every other constant must be positive.
  bool zero_allowed = false;
};
const std::vector<ChipField>& chip_fields();

// Every embedded table, parsed once, in file-name order (m1, m1_max, m1_ultra,
// m2_max, m2_ultra, m3_max, m3_max_30, m3_ultra, m3_ultra_60, m4, m4_max, m5,
// m5_max, m5_max_32).
const std::vector<Chip>& chips();

// By display name ("M3 Max", any case) or file stem ("m3_max", "m3-max").
// Throws std::invalid_argument listing the valid names.
const Chip& find_chip(std::string_view name);

// Parses one table. Throws std::runtime_error naming the file, the JSON path
// and what was expected (missing field, wrong type, value <= 0, no source,
// only some of the optional tensor_* fields).
Chip parse_chip(std::string_view json_text, std::string_view file_name);

}  // namespace mfagen::profile
