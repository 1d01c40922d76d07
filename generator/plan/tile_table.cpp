// The planner's default tiles (DESIGN.md section 4): rows of data in
// tile_table.json, embedded at configure time, keyed by kernel kind, the
// widest head dim and, for some rows, the dtype or target family. How the rows were chosen (and how `mfagen tune` rewrites
// them) is in that file and in docs/kernel_speed.md. In short: eight
// simdgroups share each staged K/V (q/dO) tile up to D 256, which keeps
// staging per MMA low, 24 simdgroups resident per core and a short dispatch
// tail; up to D 80 the forward's simdgroups form two key groups of four,
// each with two 8-row query tiles, so that every K/V fragment read feeds two
// MMAs (kernels that cannot split key blocks take the same tiles unsplit).
// float16 does the same up to D 128 and stages 32 keys per simdgroup at
// D 256: its q fragments are half, which leaves the registers for them;
// bfloat16 and float32 keep q in float32 and take the general rows. Decode is
// one 8-row simdgroup split over many threadgroups. Families share rows: the
// planner fits K/V passes to the staged element size.
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

}  // namespace

bool table_row_serves(const nlohmann::json& row, spec::Kind kind, uint32_t widest_head_dim, spec::Target target,
                      spec::DType dtype) {
  if (named(spec::kAllKinds, row.at("kind").get<std::string>(), "kind") != kind) return false;
  if (widest_head_dim > row.at("max_head_dim").get<uint32_t>()) return false;
  if (row.contains("target") && named(spec::kAllTargets, row.at("target").get<std::string>(), "target") != target)
    return false;
  if (!row.contains("dtypes")) return true;
  for (const nlohmann::json& d : row.at("dtypes"))
    if (named(spec::kAllDTypes, d.get<std::string>(), "dtype") == dtype) return true;
  return false;
}

spec::Tiles table_tiles(spec::Kind kind, uint32_t head_dim, uint32_t head_dim_v, spec::DType dtype,
                        spec::Target target) {
  const uint32_t widest = std::max(head_dim, head_dim_v);
  for (const nlohmann::json& row : table_rows())
    if (table_row_serves(row, kind, widest, target, dtype)) {
      const nlohmann::json& t = row.at("tiles");
      return {t.at("block_q").get<uint32_t>(), t.at("block_k").get<uint32_t>(), t.at("simdgroups").get<uint32_t>(),
              t.value("key_groups", 1u)};
    }
  throw std::logic_error(
      fmt::format("tile_table.json has no {} row for head dim {}", spec::to_string(kind), widest));
}

}  // namespace mfagen::plan
