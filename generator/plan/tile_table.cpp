// The planner's default tiles (DESIGN.md section 4): rows of data in
// tile_table.json, embedded at configure time, keyed by kernel kind, the
// widest head dim and, for some rows, the dtype, target family or causal
// mode (plan/tile_table.h). How the rows were chosen (and how `mfagen tune`
// rewrites them) is in that file and in docs/kernel_speed.md. In short:
// eight simdgroups share each staged K/V (q/dO) tile up to D 256, which
// keeps staging per MMA low, 24 simdgroups resident per core and a short
// dispatch tail. Up to D 80 the forward's simdgroups form two key groups of
// four, each with two 8-row query tiles, so that every K/V fragment read
// feeds two MMAs; float16 does the same up to D 128 and stages 64 keys at
// D 256, because its q fragments are half and leave the registers for them.
// Causal D 64 stages fewer keys per step than the unmasked forward. Kernels
// that cannot split key blocks take the next row without key groups (64x64x8
// up to D 128). Decode is one 8-row simdgroup split over many threadgroups.
// Families share rows: the planner fits K/V passes to the staged element size.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>

#include "plan/kernel_plan.h"
#include "plan/tile_table.h"

namespace mfagen::plan {

// Defined in the tile_table_data.cpp that CMake generates from tile_table.json.
std::string_view embedded_tile_table();

namespace {

template <class Value, size_t N>
Value named(const std::array<Value, N>& all, const std::string& name, const char* what) {
  for (Value v : all)
    if (spec::to_string(v) == name) return v;
  throw std::logic_error(fmt::format("tile_table.json: unknown {} \"{}\"", what, name));
}

// Parsed once. The file is the repository's own data, checked by tests; a
// malformed table is a build defect (logic_error), not a user error.
const nlohmann::json& table_rows() {
  static const nlohmann::json rows = nlohmann::json::parse(embedded_tile_table()).at("rows");
  return rows;
}

// A row's optional list field (`dtypes`, `causal`) admits the kernel's value.
template <class Value, size_t N>
bool admits(const nlohmann::json& row, const char* field, const std::array<Value, N>& all, Value value) {
  if (!row.contains(field)) return true;
  for (const nlohmann::json& name : row.at(field))
    if (named(all, name.get<std::string>(), field) == value) return true;
  return false;
}

}  // namespace

bool table_row_serves(const nlohmann::json& row, const spec::KernelSpec& k) {
  const bool kind = named(spec::kAllKinds, row.at("kind").get<std::string>(), "kind") == k.kind;
  const bool head_dim = std::max(k.head_dim, k.head_dim_v) <= row.at("max_head_dim").get<uint32_t>();
  const bool target =
      !row.contains("target") || named(spec::kAllTargets, row.at("target").get<std::string>(), "target") == k.target;
  // Rows with key groups serve the kernels that can split key blocks; the
  // others (paged and quantized caches, mask_mod) go on to the next row.
  const bool key_groups = row.at("tiles").value("key_groups", 1u) == 1 || splits_key_blocks(k);
  return kind && head_dim && target && key_groups && admits(row, "dtypes", spec::kAllDTypes, k.dtype) &&
         admits(row, "causal", spec::kAllCausals, k.causal);
}

spec::Tiles table_tiles(const spec::KernelSpec& k) {
  for (const nlohmann::json& row : table_rows())
    if (table_row_serves(row, k)) {
      const nlohmann::json& t = row.at("tiles");
      return {t.at("block_q").get<uint32_t>(), t.at("block_k").get<uint32_t>(), t.at("simdgroups").get<uint32_t>(),
              t.value("key_groups", 1u)};
    }
  throw std::logic_error(fmt::format("tile_table.json has no {} row for head dim {}", spec::to_string(k.kind),
                                     std::max(k.head_dim, k.head_dim_v)));
}

}  // namespace mfagen::plan
