// The planner's default tiles (DESIGN.md section 4): rows of data in
// tile_table.json, embedded at configure time, keyed by kernel kind and the
// widest head dim. How the rows were chosen (and how `mfagen tune` rewrites
// them) is in that file and in docs/kernel_speed.md. In short: eight
// simdgroups share each staged K/V (q/dO) tile up to D 256, which keeps
// staging per MMA low, 24 simdgroups resident per core and a short dispatch
// tail; up to D 80 the forward's simdgroups form two key groups of four,
// each with two 8-row query tiles, so that every K/V fragment read feeds two
// MMAs (kernels that cannot split key blocks take the same tiles unsplit;
// larger head dims would keep more live values than a thread has
// registers); decode is one 8-row simdgroup split over many threadgroups.
// Every dtype gets the same rows: the planner fits K/V passes to the staged
// element size.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "plan/kernel_plan.h"

namespace mfagen::plan {

// Defined in the tile_table_data.cpp that CMake generates from tile_table.json.
std::string_view embedded_tile_table();

namespace {

struct TableRow {
  spec::Kind kind;
  uint32_t max_head_dim;
  spec::Tiles tiles;
  std::optional<spec::Target> target;  // a row for one target family only (apple10's TensorOps kernels)
};

spec::Target target_named(const std::string& name) {
  for (spec::Target t : spec::kAllTargets)
    if (spec::to_string(t) == name) return t;
  throw std::logic_error(fmt::format("tile_table.json: unknown target \"{}\"", name));
}

spec::Kind kind_named(const std::string& name) {
  for (spec::Kind k : spec::kAllKinds)
    if (spec::to_string(k) == name) return k;
  throw std::logic_error(fmt::format("tile_table.json: unknown kind \"{}\"", name));
}

// Parsed once. The file is the repository's own data, checked by tests; a
// malformed table is a build defect (logic_error), not a user error.
const std::vector<TableRow>& table_rows() {
  static const std::vector<TableRow> rows = [] {
    std::vector<TableRow> parsed;
    const nlohmann::json doc = nlohmann::json::parse(embedded_tile_table());
    for (const nlohmann::json& row : doc.at("rows")) {
      const nlohmann::json& t = row.at("tiles");
      parsed.push_back({kind_named(row.at("kind").get<std::string>()), row.at("max_head_dim").get<uint32_t>(),
                        {t.at("block_q").get<uint32_t>(), t.at("block_k").get<uint32_t>(),
                         t.at("simdgroups").get<uint32_t>(), t.value("key_groups", 1u)},
                        row.contains("target") ? std::optional(target_named(row.at("target").get<std::string>()))
                                               : std::nullopt});
    }
    return parsed;
  }();
  return rows;
}

spec::Tiles row_for(spec::Kind kind, uint32_t head_dim, uint32_t head_dim_v,
                    std::optional<spec::Target> target = std::nullopt) {
  const uint32_t widest = std::max(head_dim, head_dim_v);
  for (const TableRow& row : table_rows())
    if (row.kind == kind && widest <= row.max_head_dim && (!row.target || row.target == target)) return row.tiles;
  throw std::logic_error(
      fmt::format("tile_table.json has no {} row for head dim {}", spec::to_string(kind), widest));
}

}  // namespace

spec::Tiles table_tiles(uint32_t head_dim, uint32_t head_dim_v, spec::DType, spec::Target target) {
  return row_for(spec::Kind::forward, head_dim, head_dim_v, target);
}

spec::Tiles decode_table_tiles(uint32_t head_dim, uint32_t head_dim_v) {
  return row_for(spec::Kind::decode, head_dim, head_dim_v);
}

spec::Tiles backward_table_tiles(uint32_t head_dim, uint32_t head_dim_v) {
  return row_for(spec::Kind::backward, head_dim, head_dim_v);
}

}  // namespace mfagen::plan
