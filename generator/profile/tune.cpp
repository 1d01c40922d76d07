#include "profile/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "plan/kernel_plan.h"
#include "plan/tile_table.h"
#include "profile/chip_selection.h"
#include "profile/spec_profile.h"

namespace mfagen::profile {
namespace {

spec::Tiles planner_default(spec::KernelSpec spec) {
  spec.tiles.reset();
  const plan::KernelPlan p = plan::plan_kernel(spec);
  return {p.block_q, p.block_k, p.simdgroups, p.key_groups};
}

nlohmann::json tiles_json(const spec::Tiles& t) {
  nlohmann::json j = {{"block_q", t.block_q}, {"block_k", t.block_k}, {"simdgroups", t.simdgroups}};
  if (t.key_groups > 1) j["key_groups"] = t.key_groups;  // as a spec spells it: only when split
  return j;
}

}  // namespace

std::vector<spec::Tiles> tile_candidates(const spec::KernelSpec& spec, const TuneGrid& grid, uint32_t* refused) {
  std::vector<spec::Tiles> accepted;
  uint32_t refusals = 0;
  for (uint32_t q : grid.block_q)
    for (uint32_t k : grid.block_k)
      for (uint32_t s : grid.simdgroups)
        for (uint32_t g : grid.key_groups) {
          spec::KernelSpec candidate = spec;
          candidate.tiles = spec::Tiles{q, k, s, g};
          try {
            plan::plan_kernel(candidate);
            accepted.push_back(*candidate.tiles);
          } catch (const spec::SpecError&) {
            ++refusals;  // over a limit, not a multiple the kernel needs, or key groups it cannot take
          }
        }
  if (refused) *refused = refusals;
  return accepted;
}

TuneResult tune_kernel(const spec::KernelSpec& spec, const plan::CostShape& shape, const std::vector<Chip>& chips,
                       uint64_t sample_threadgroups, const TuneGrid& grid) {
  TuneResult result;
  result.spec = spec;
  result.table_tiles = planner_default(spec);
  for (const spec::Tiles& tiles : tile_candidates(spec, grid, &result.refused)) {
    spec::KernelSpec candidate = spec;
    candidate.tiles = tiles;
    const plan::KernelPlan p = plan::plan_kernel(candidate);
    TuneCandidate c;
    c.tiles = tiles;
    c.fragment_registers = p.fragment_registers;
    c.threadgroup_bytes = p.threadgroup_bytes;
    c.predictions = predict_on(profile_plan_call(p, shape, sample_threadgroups), chips).predictions;
    for (const Prediction& pr : c.predictions) c.total_seconds += pr.seconds;
    result.ranked.push_back(std::move(c));
  }
  // stable_sort: candidates with equal totals keep grid order (deterministic output).
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const TuneCandidate& a, const TuneCandidate& b) { return a.total_seconds < b.total_seconds; });
  return result;
}

nlohmann::json to_json(const TuneResult& r) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const TuneCandidate& c : r.ranked) {
    nlohmann::json seconds = nlohmann::json::object();
    for (const Prediction& p : c.predictions) seconds[p.chip] = p.seconds;
    candidates.push_back({{"tiles", tiles_json(c.tiles)},
                          {"fragment_registers", c.fragment_registers},
                          {"threadgroup_bytes", c.threadgroup_bytes},
                          {"predicted_seconds", seconds},
                          {"total_seconds", c.total_seconds}});
  }
  const std::string& path = r.spec.origin.json_path;
  nlohmann::json j = {{"name", r.spec.name},
                      {"origin", r.spec.origin.file + (path.empty() ? "" : ":" + path)},
                      {"table_tiles", tiles_json(r.table_tiles)},
                      {"refused", r.refused},
                      {"candidates", std::move(candidates)}};
  j["best"] = r.ranked.empty() ? nlohmann::json(nullptr) : tiles_json(r.ranked.front().tiles);
  return j;
}

void write_best_rows(nlohmann::json& table, const std::vector<TuneResult>& results, const std::string& source) {
  for (const TuneResult& r : results) {
    if (r.ranked.empty()) continue;
    const std::string kind(spec::to_string(r.spec.kind));
    const uint32_t widest = std::max(r.spec.head_dim, r.spec.head_dim_v);
    nlohmann::json* row = nullptr;
    // The row the planner would read (rows with a target, dtypes or causal modes serve those only).
    for (nlohmann::json& candidate : table.at("rows"))
      if (plan::table_row_serves(candidate, r.spec)) {
        row = &candidate;
        break;
      }
    if (!row)
      throw std::invalid_argument(
          fmt::format("the tile table has no {} row for head dim {} (kernel {})", kind, widest, r.spec.name));
    (*row)["tiles"] = tiles_json(r.ranked.front().tiles);
    (*row)["source"] = fmt::format("{} (kernel {})", source, r.spec.name);
  }
}

}  // namespace mfagen::profile
