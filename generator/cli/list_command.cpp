// `mfagen list`: what kernels a spec file expands to, or what a generated
// manifest.json holds, one line per kernel in the same format for both.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "errors.h"
#include "io/text_file.h"
#include "kernel_summary.h"
#include "spec/canonical.h"
#include "spec/spec_parser.h"
#include "text_table.h"

namespace mfagen::cli {
namespace {

using nlohmann::json;

// A manifest has a top-level "format" next to "kernels"; a spec set has
// only "kernels" (and "format" would be an unknown field there).
bool is_manifest(const json& doc) { return doc.is_object() && doc.contains("format") && doc.contains("kernels"); }

void list_manifest(const std::string& file, const json& doc) {
  std::vector<TextRow> rows;
  try {
    for (const json& k : doc.at("kernels")) rows.push_back(kernel_summary(k.at("spec"), k.at("dispatch")));
    fmt::print("{}: manifest format {} ({}), {} kernel{}\n", file, doc.at("format").dump(),
               doc.value("generator", std::string("unknown generator")), rows.size(), rows.size() == 1 ? "" : "s");
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: not a manifest mfagen can read: {}", file, e.what()));
  }
  fmt::print("{}", format_table(rows, "  "));
}

void list_spec_file(const std::string& file) {
  std::vector<TextRow> rows;
  for (const spec::KernelSpec& s : spec::load_spec_file(file))
    rows.push_back(kernel_summary(json::parse(spec::canonical_json(s))));
  fmt::print("{}: {} kernel{}\n", file, rows.size(), rows.size() == 1 ? "" : "s");
  fmt::print("{}", format_table(rows, "  "));
}

int run_list(const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    // Malformed JSON is left to the spec parser, whose message names the line and column.
    json doc = json::parse(io::read_text_file(file), nullptr, /*allow_exceptions=*/false);
    if (is_manifest(doc))
      list_manifest(file, doc);
    else
      list_spec_file(file);
  }
  return kExitOk;
}

}  // namespace

void register_list_command(CLI::App& app, CommandAction& action) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("list", "List the kernels of spec files or of a generated manifest.json");
  cmd->footer(
      "For a spec file: the kernels it expands to (lists become every combination), as `generate`\n"
      "would name them. For a manifest.json (recognized by its top-level \"format\" key): the\n"
      "kernels it holds. One line per kernel:\n"
      "  NAME  KIND  DTYPE  D=.. Dv=..  causal=..  gqa=yes|no  lse=yes|no  tiles=..  TARGET\n"
      "tiles=BQxBKxSG are the spec's block_q x block_k x simdgroups (BQxBKxSG/G: G key groups);\n"
      "tiles=table means the planner's tile table decides (a manifest also shows what it chose:\n"
      "table:BQxBKxSG).\n\n"
      "Exit status: 0 ok, 1 unreadable or invalid file, 2 internal error.");
  cmd->add_option("files", *files, "spec files or manifest.json files")->required()->type_name("SPEC|MANIFEST");
  cmd->callback([files, &action] { action = [files] { return run_list(*files); }; });
}

}  // namespace mfagen::cli
