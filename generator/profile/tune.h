// `mfagen tune`: a kernel's tiles chosen by a search over the profile. Every
// tile row of a grid that the planner accepts is counted on the cpu backend
// at one call shape and predicted per chip by the cost model; the rows are
// ranked by their predicted time summed over the chips (docs/kernel_speed.md).
// Every time here is a model prediction, not a measurement.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "plan/forward_cost.h"
#include "profile/chip.h"
#include "profile/prediction.h"
#include "spec/kernel_spec.h"

namespace mfagen::profile {

// The grid searched: every combination the planner accepts.
struct TuneGrid {
  std::vector<uint32_t> block_q = {8, 16, 32, 64, 128};
  std::vector<uint32_t> block_k = {8, 16, 32, 64, 128};
  std::vector<uint32_t> simdgroups = {1, 2, 4, 8};
  std::vector<uint32_t> key_groups = {1};  // forward: simdgroup groups that split each staged key block
};

struct TuneCandidate {
  spec::Tiles tiles;
  uint32_t fragment_registers = 0;  // 32-bit registers of live fragment values per thread (plan)
  uint32_t threadgroup_bytes = 0;  // static threadgroup memory (plan)
  std::vector<Prediction> predictions;  // one per chip, in the order asked
  double total_seconds = 0;             // summed over the chips
};

struct TuneResult {
  spec::KernelSpec spec;               // as given (its own tiles, if any, are ignored by the search)
  spec::Tiles table_tiles;             // what the planner picks without `tiles`
  std::vector<TuneCandidate> ranked;   // fastest first; equal times in grid order
  uint32_t refused = 0;                // grid rows the planner refused
};

// The grid rows the planner accepts for this spec, in grid order.
std::vector<spec::Tiles> tile_candidates(const spec::KernelSpec& spec, const TuneGrid& grid, uint32_t* refused);

// Counts and predicts every candidate at `shape` (which must suit the kernel:
// decode at most 16 queries; no GQA: Hkv = Hq).
TuneResult tune_kernel(const spec::KernelSpec& spec, const plan::CostShape& shape, const std::vector<Chip>& chips,
                       uint64_t sample_threadgroups, const TuneGrid& grid = {});

// {"name", "origin", "kind", "table_tiles", "best", "refused", "candidates": [...]}.
nlohmann::json to_json(const TuneResult& result);

// In a tile table document (generator/plan/tile_table.json), replaces the
// row each tuned kernel falls in (its kind; the first row whose max_head_dim
// covers its widest head dim) with its best tiles, and records `source` (the
// command) there. std::invalid_argument naming the kernel if no row covers it.
void write_best_rows(nlohmann::json& table, const std::vector<TuneResult>& results, const std::string& source);

}  // namespace mfagen::profile
