// `mfagen tune SPEC...`: the tiles of each kernel chosen by a search over the
// profile (generator/profile/tune.h, docs/kernel_speed.md). Prints the
// fastest rows per kernel and, with --json-out, writes every candidate's
// predictions and the command that produced them, as data a tile table or a
// spec's `tiles` can be taken from.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "shape_options.h"
#include "errors.h"
#include "io/atomic_file.h"
#include "profile/chip_selection.h"
#include "profile/profile_json.h"
#include "profile/tune.h"
#include "profile_output.h"
#include "spec/spec_parser.h"
#include "text_table.h"

namespace mfagen::cli {
namespace {

struct TuneArgs {
  std::vector<std::string> specs;
  std::string kernel;  // only this kernel name
  plan::CostShape shape{1, 16, 16, 4096, 4096};
  std::string chips = "m1_max,m3_max";
  uint64_t sample = kDefaultProfileSample;
  uint32_t top = 5;
  std::string json_file;
  std::string table_file;  // a tile table (generator/plan/tile_table.json) to rewrite
  profile::TuneGrid grid;
};

// The command that reproduces this search, every choice spelled out (recorded in the JSON).
std::string command_line(const TuneArgs& a) {
  std::string line = "mfagen tune";
  for (const std::string& spec : a.specs) line += " " + spec;
  if (!a.kernel.empty()) line += " --kernel " + a.kernel;
  const plan::CostShape& s = a.shape;
  line += fmt::format(" --batch {} --heads-q {} --heads-kv {} --seq-q {} --seq-k {} --chip {} --sample {}", s.batch,
                      s.heads_q, s.heads_kv, s.seq_q, s.seq_k, a.chips, a.sample);
  line += fmt::format(" --block-q {} --block-k {} --simdgroups {}", fmt::join(a.grid.block_q, ","),
                      fmt::join(a.grid.block_k, ","), fmt::join(a.grid.simdgroups, ","));
  // Spelled only when searched, so that the commands recorded before key groups read the same.
  if (a.grid.key_groups != std::vector<uint32_t>{1})
    line += fmt::format(" --key-groups {}", fmt::join(a.grid.key_groups, ","));
  return line;
}

std::string tiles_text(const spec::Tiles& t) {
  return fmt::format("{}x{}x{}{}", t.block_q, t.block_k, t.simdgroups,
                     t.key_groups > 1 ? fmt::format("/{}", t.key_groups) : std::string());
}

void print_result(const profile::TuneResult& r, uint32_t top) {
  fmt::print("{}  ({})\n", r.spec.name, r.spec.origin.file);
  std::vector<TextRow> rows;
  TextRow header = {"rank", "tiles (q x k x simdgroups[/key groups])", "fragment registers", "threadgroup memory"};
  if (!r.ranked.empty())
    for (const profile::Prediction& p : r.ranked.front().predictions) header.push_back(p.chip);
  header.push_back("total");
  rows.push_back(header);
  for (size_t i = 0; i < r.ranked.size() && i < top; ++i) {
    const profile::TuneCandidate& c = r.ranked[i];
    TextRow row = {std::to_string(i + 1), tiles_text(c.tiles), std::to_string(c.fragment_registers),
                   fmt::format("{} B", c.threadgroup_bytes)};
    for (const profile::Prediction& p : c.predictions) row.push_back(profile::format_seconds(p.seconds));
    row.push_back(profile::format_seconds(c.total_seconds));
    rows.push_back(row);
  }
  fmt::print("{}", format_table(rows, "  "));
  size_t table_rank = 0;
  for (size_t i = 0; i < r.ranked.size(); ++i)
    if (r.ranked[i].tiles == r.table_tiles) table_rank = i + 1;
  fmt::print("  {} candidates ({} grid rows refused by the planner); the planner's table picks {}{}\n",
             r.ranked.size(), r.refused, tiles_text(r.table_tiles),
             table_rank ? fmt::format(", rank {}", table_rank) : std::string(", not in the grid"));
  if (!r.ranked.empty()) {
    const spec::Tiles& best = r.ranked.front().tiles;
    fmt::print("  best: \"tiles\": {{\"block_q\": {}, \"block_k\": {}, \"simdgroups\": {}{}}}\n", best.block_q,
               best.block_k, best.simdgroups,
               best.key_groups > 1 ? fmt::format(", \"key_groups\": {}", best.key_groups) : std::string());
  }
}

// The tile table --write-table rewrites: it must be readable JSON with a "rows" list.
nlohmann::json read_table(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(fmt::format("--write-table {}: cannot read the file", file));
  nlohmann::json table = nlohmann::json::parse(in, nullptr, false);
  if (table.is_discarded() || !table.is_object() || !table.contains("rows") || !table["rows"].is_array())
    throw UserError(fmt::format("--write-table {}: not a tile table (JSON with a \"rows\" list, as "
                                "generator/plan/tile_table.json)",
                                file));
  return table;
}

int run_tune(const TuneArgs& args) {
  const plan::CostShape& s = args.shape;
  if (s.heads_q % s.heads_kv != 0)
    throw UserError(fmt::format("--heads-kv {} must divide --heads-q {}", s.heads_kv, s.heads_q));
  const std::vector<profile::Chip> chips = chips_named(args.chips);
  std::vector<spec::KernelSpec> kernels;
  for (const spec::KernelSpec& k : spec::load_spec_files({args.specs.begin(), args.specs.end()}))
    if (args.kernel.empty() || k.name == args.kernel) kernels.push_back(k);
  if (kernels.empty()) throw UserError(fmt::format("no kernel named \"{}\" in the spec files", args.kernel));

  fmt::print("All times below are predictions of a model (the mfagen cost model, see docs/cost_model.md), not "
             "measurements on an Apple GPU.\n");
  fmt::print("Call shape: B {}, Hq {}, Hkv {}, Sq {}, Sk {}\n\n", s.batch, s.heads_q, s.heads_kv, s.seq_q, s.seq_k);
  nlohmann::json table;
  if (!args.table_file.empty()) table = read_table(args.table_file);  // before anything slow runs
  nlohmann::json results = nlohmann::json::array();
  std::vector<profile::TuneResult> tuned;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (i > 0) fmt::print("\n");
    tuned.push_back(profile::tune_kernel(kernels[i], s, chips, args.sample, args.grid));
    print_result(tuned.back(), args.top);
    results.push_back(profile::to_json(tuned.back()));
  }
  if (!args.table_file.empty()) {
    try {
      profile::write_best_rows(table, tuned, command_line(args));
    } catch (const std::exception& e) {
      throw UserError(fmt::format("--write-table {}: {}", args.table_file, e.what()));
    }
    io::write_file_atomic(args.table_file, table.dump(2) + "\n");
    fmt::print("\nwrote the best rows to {}\n", args.table_file);
  }
  if (!args.json_file.empty()) {
    const nlohmann::json doc = {
        {"command", command_line(args)},
        {"model", "every time is a prediction of the mfagen cost model (docs/cost_model.md), not a measurement"},
        {"shape",
         {{"batch", s.batch},
          {"heads_q", s.heads_q},
          {"heads_kv", s.heads_kv},
          {"seq_q", s.seq_q},
          {"seq_k", s.seq_k}}},
        {"sample_threadgroups", args.sample},
        {"kernels", std::move(results)}};
    io::write_file_atomic(args.json_file, doc.dump(2) + "\n");
  }
  return kExitOk;
}

}  // namespace

void register_tune_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand("tune", "Choose each kernel's tiles by a search over the profile");
  cmd->footer(
      "For every kernel of the spec files (or only --kernel): each row of a tile grid (--block-q,\n"
      "--block-k, --simdgroups) that the planner accepts is generated, run on synthetic\n"
      "inputs at the call shape on the cpu backend with its work counted, and predicted per chip by\n"
      "the cost model (as `mfagen profile` does). Rows are ranked by their time summed over the chips.\n"
      "Every time printed is a MODEL PREDICTION, not a measurement on an Apple GPU. --json-out writes\n"
      "every candidate and the command line; pin the best row with the spec's `tiles` field, or let\n"
      "--write-table rewrite the planner's table (generator/plan/tile_table.json, then rebuild).\n\n"
      "Example:\n"
      "  mfagen tune specs/llama.json --kernel attn_fwd_f16_d128_causal_br_gqa --chip m1_max,m3_max\n\n"
      "Exit status: 0 ok, 1 bad spec, shape or option, 2 internal error.");
  cmd->add_option("specs", args->specs, "spec files (JSON)")->required()->type_name("SPEC");
  cmd->add_option("--kernel", args->kernel, "only the kernel of this name");
  add_shape_options(*cmd, args->shape);
  cmd->add_option("--chip", args->chips, "chips to sum over: all, or names separated by commas")
      ->capture_default_str();
  cmd->add_option("--sample", args->sample, "threadgroups executed per launch (0: all)")->capture_default_str();
  cmd->add_option("--block-q", args->grid.block_q, "block_q values to try")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--block-k", args->grid.block_k, "block_k values to try")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--simdgroups", args->grid.simdgroups, "simdgroup counts to try")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--key-groups", args->grid.key_groups,
                  "key_groups values to try (forward: simdgroup groups that split each staged key block)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--top", args->top, "rows printed per kernel")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--json-out", args->json_file, "write every candidate's predictions here (JSON)")
      ->type_name("FILE.json");
  cmd->add_option("--write-table", args->table_file,
                  "rewrite the row each kernel falls in, in this tile table, with its best tiles and the command")
      ->type_name("generator/plan/tile_table.json");
  cmd->callback([args, &action] { action = [args] { return run_tune(*args); }; });
}

}  // namespace mfagen::cli
