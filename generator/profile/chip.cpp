#include "profile/chip.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

namespace mfagen::profile {

// Defined in the chip_tables.cpp that CMake generates from chips/*.json.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_chip_tables();

const std::vector<ChipField>& chip_fields() {
  static const std::vector<ChipField> fields = {
      {"gpu_cores", &Chip::gpu_cores, "GPU cores"},
      {"clock_ghz", &Chip::clock_ghz, "GPU clock, GHz"},
      {"fp32_lanes_per_core_per_cycle", &Chip::fp32_lanes_per_core_per_cycle, "FP32 FMA lanes per core per cycle"},
      {"fp16_rate", &Chip::fp16_rate, "FP16 FMA rate relative to FP32"},
      {"schedulers_per_core", &Chip::schedulers_per_core,
       "instruction schedulers per core (one simdgroup instruction per cycle each)"},
      {"mma_cycles_f16", &Chip::mma_cycles_f16, "cycles per simdgroup 8x8x8 MMA, half operands"},
      {"mma_cycles_bf16", &Chip::mma_cycles_bf16, "cycles per simdgroup 8x8x8 MMA, bfloat operands"},
      {"mma_cycles_f32", &Chip::mma_cycles_f32, "cycles per simdgroup 8x8x8 MMA, float operands"},
      {"mma_latency_cycles", &Chip::mma_latency_cycles, "cycles from issue to result of a simdgroup 8x8x8 MMA"},
      {"transcendental_cycles", &Chip::transcendental_cycles, "cycles per exp2/log2 (complex pipe)"},
      {"tanh_cycles", &Chip::tanh_cycles, "cycles per tanh (complex pipe)"},
      {"rsqrt_cycles", &Chip::rsqrt_cycles, "cycles per rsqrt (complex pipe)"},
      {"reciprocal_cycles", &Chip::reciprocal_cycles, "cycles per reciprocal (complex pipe)"},
      {"divide_cycles", &Chip::divide_cycles, "cycles per float divide (complex pipe)"},
      {"sqrt_cycles", &Chip::sqrt_cycles, "cycles per sqrt (complex pipe)"},
      {"int_mul_cycles", &Chip::int_mul_cycles, "cycles per 32-bit integer multiply"},
      {"int_divide_cycles", &Chip::int_divide_cycles, "cycles per integer divide/remainder"},
      {"bf16_widen_cycles", &Chip::bf16_widen_cycles, "cycles per bfloat -> float widening (0: free)", false, true},
      {"int_fp16_coissue", &Chip::int_fp16_coissue,
       "1 if integer and FP16 instructions issue beside FP32 instructions, else 0", false, true},
      {"dram_bandwidth_gbs", &Chip::dram_bandwidth_gbs, "DRAM bandwidth, GB/s"},
      {"cache_bandwidth_gbs", &Chip::cache_bandwidth_gbs, "bandwidth of re-read bytes hitting L2/SLC, GB/s"},
      {"l1_latency_ns", &Chip::l1_latency_ns, "latency of a device load hitting the core's L1, ns"},
      {"l2_latency_ns", &Chip::l2_latency_ns, "latency of a device load served by the GPU's L2, ns"},
      {"dram_latency_ns", &Chip::dram_latency_ns, "latency of a device load served by DRAM, ns"},
      {"threadgroup_memory_bytes_per_core", &Chip::threadgroup_memory_bytes_per_core,
       "threadgroup memory per core, bytes"},
      {"threadgroup_bandwidth_bytes_per_cycle_per_core", &Chip::threadgroup_bandwidth_bytes_per_cycle_per_core,
       "threadgroup memory bandwidth per core, bytes per cycle"},
      {"max_threadgroup_memory_per_threadgroup", &Chip::max_threadgroup_memory_per_threadgroup,
       "threadgroup memory one threadgroup may allocate, bytes"},
      {"register_file_bytes_per_core", &Chip::register_file_bytes_per_core, "register file per core, bytes"},
      {"max_registers_per_thread", &Chip::max_registers_per_thread,
       "32-bit registers one thread may use (beyond: spills)"},
      {"max_threads_per_core", &Chip::max_threads_per_core, "resident threads per core"},
      {"saturation_simdgroups_per_core", &Chip::saturation_simdgroups_per_core,
       "resident simdgroups that saturate the ALUs"},
      {"dynamic_caching", &Chip::dynamic_caching,
       "1 if registers and threadgroup memory share one on-chip pool (Dynamic Caching), else 0", false, true},
      {"barrier_cycles", &Chip::barrier_cycles, "cycles per threadgroup_barrier per simdgroup"},
      {"simd_shuffle_cycles", &Chip::simd_shuffle_cycles, "cycles per simd shuffle/broadcast"},
      {"simd_reduce_cycles", &Chip::simd_reduce_cycles, "cycles per simd reduction"},
      {"tensor_flops_per_core_per_cycle_f16", &Chip::tensor_flops_per_core_per_cycle_f16,
       "Neural Accelerator matmul2d FLOPs per core per cycle, half/bfloat operands (only chips that have them)", true},
      {"tensor_flops_per_core_per_cycle_i8", &Chip::tensor_flops_per_core_per_cycle_i8,
       "Neural Accelerator matmul2d operations per core per cycle, 8-bit integer operands (only chips that have them)",
       true},
  };
  return fields;
}

const Citation& Chip::citation(std::string_view field) const {
  auto it = citations.find(field);
  if (it == citations.end()) throw std::out_of_range(fmt::format("chip {}: no field \"{}\"", name, field));
  return it->second;
}

namespace {

using nlohmann::json;

// Errors name the file and the JSON path (RFC 6901 pointer) of the problem.
[[noreturn]] void fail(std::string_view file, std::string_view path, std::string_view what) {
  throw std::runtime_error(fmt::format("chip table {}: {}: {}", file, path, what));
}

std::string required_string(const json& doc, std::string_view file, const char* key, bool non_empty) {
  const std::string path = fmt::format("/{}", key);
  auto it = doc.find(key);
  if (it == doc.end()) fail(file, path, "missing field, expected a string");
  if (!it->is_string()) fail(file, path, fmt::format("expected a string, found {}", it->dump()));
  std::string s = it->get<std::string>();
  if (non_empty && s.empty()) fail(file, path, "expected a non-empty string");
  return s;
}

constexpr std::string_view kFieldShape =
    R"({"value": number > 0, "source": "non-empty text", "assumption": true|false})";

void parse_field(const json& doc, std::string_view file, const ChipField& f, Chip& chip) {
  const std::string path = fmt::format("/{}", f.name);
  auto it = doc.find(f.name);
  if (it == doc.end()) fail(file, path, fmt::format("missing field, expected {}", kFieldShape));
  if (!it->is_object()) fail(file, path, fmt::format("expected {}, found {}", kFieldShape, it->dump()));
  const json& v = *it;
  for (const auto& [key, _] : v.items()) {
    if (key != "value" && key != "source" && key != "assumption")
      fail(file, fmt::format("{}/{}", path, key), "unknown key, expected only value, source and assumption");
  }
  auto value = v.find("value");
  if (value == v.end()) fail(file, path + "/value", "missing, expected a number > 0");
  const char* expected = f.zero_allowed ? "a number >= 0" : "a number > 0";
  if (!value->is_number()) fail(file, path + "/value", fmt::format("expected {}, found {}", expected, value->dump()));
  const double x = value->get<double>();
  if (!(f.zero_allowed ? x >= 0 : x > 0))
    fail(file, path + "/value", fmt::format("expected {}, found {}", expected, value->dump()));
  auto source = v.find("source");
  if (source == v.end())
    fail(file, path + "/source", "missing, every constant needs a source or the reason it is an assumption");
  if (!source->is_string() || source->get<std::string>().empty())
    fail(file, path + "/source", fmt::format("expected a non-empty string, found {}", source->dump()));
  auto assumption = v.find("assumption");
  if (assumption == v.end()) fail(file, path + "/assumption", "missing, expected true or false");
  if (!assumption->is_boolean())
    fail(file, path + "/assumption", fmt::format("expected true or false, found {}", assumption->dump()));
  chip.*(f.member) = x;
  chip.citations[std::string(f.name)] = Citation{source->get<std::string>(), assumption->get<bool>()};
}

// "M3 Max", "m3_max", "m3-max" and "m3max" all become "m3max".
std::string normalized(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string_view stem(std::string_view file) { return file.substr(0, file.rfind('.')); }

}  // namespace

Chip parse_chip(std::string_view json_text, std::string_view file_name) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail(file_name, "", fmt::format("not valid JSON: {}", e.what()));
  }
  if (!doc.is_object()) fail(file_name, "", "expected a JSON object");

  Chip chip;
  chip.file = std::string(file_name);
  chip.name = required_string(doc, file_name, "name", true);
  chip.family = required_string(doc, file_name, "family", true);
  if (doc.contains("notes")) chip.notes = required_string(doc, file_name, "notes", false);

  std::set<std::string_view> known = {"name", "family", "notes"};
  const ChipField* optional_present = nullptr;
  const ChipField* optional_missing = nullptr;
  for (const ChipField& f : chip_fields()) {
    known.insert(f.name);
    if (f.optional && !doc.contains(f.name)) {
      optional_missing = &f;
      continue;
    }
    if (f.optional) optional_present = &f;
    parse_field(doc, file_name, f, chip);
  }
  // The tensor_* group describes one unit: a chip has Neural Accelerators (all of them) or not (none).
  if (optional_present && optional_missing)
    fail(file_name, fmt::format("/{}", optional_missing->name),
         fmt::format("missing; a table with {} (Neural Accelerators) needs every tensor_* field",
                     optional_present->name));
  for (const auto& [key, _] : doc.items()) {
    if (!known.count(key)) fail(file_name, "/" + key, "unknown field (a typo?)");
  }
  return chip;
}

const std::vector<Chip>& chips() {
  // The generated list is sorted by file name, which is the documented order.
  static const std::vector<Chip> all = [] {
    std::vector<Chip> out;
    for (const auto& [file, text] : embedded_chip_tables()) out.push_back(parse_chip(text, file));
    return out;
  }();
  return all;
}

const Chip& find_chip(std::string_view name) {
  const std::string want = normalized(name);
  for (const Chip& c : chips()) {
    if (normalized(c.name) == want || normalized(stem(c.file)) == want) return c;
  }
  std::string valid;
  for (const Chip& c : chips()) {
    valid += fmt::format("{}\"{}\" ({})", valid.empty() ? "" : ", ", c.name, stem(c.file));
  }
  throw std::invalid_argument(fmt::format("unknown chip \"{}\"; valid chips: {}", name, valid));
}

}  // namespace mfagen::profile
