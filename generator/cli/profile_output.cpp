#include "profile_output.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <stdexcept>
#include <system_error>

#include "errors.h"
#include "io/atomic_file.h"
#include "profile/chip_selection.h"
#include "profile/html_report.h"
#include "profile/profile_json.h"

namespace mfagen::cli {
namespace {

void write_text(const std::string& option, const std::string& path, const std::string& text) {
  try {
    io::write_file_atomic(path, text);
  } catch (const std::exception& e) {
    throw UserError(fmt::format("{} {}: cannot write: {}", option, path, e.what()));
  }
}

}  // namespace

std::vector<profile::Chip> chips_named(const std::string& value) {
  try {
    return profile::select_chips(value);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("--chip {}: {}", value, e.what()));
  }
}

void add_profile_output_options(CLI::App& command, ProfileOutputArgs& args) {
  command.add_option("--chip", args.chips, "chips to predict for: all, or names separated by commas (m1_max,m3_max)")
      ->capture_default_str();
  command.add_flag("--json", args.json, "print JSON instead of text");
  command.add_option("--json-out", args.json_file, "also write the JSON to this file")->type_name("FILE");
  command.add_option("--report", args.report_file, "also write a self-contained HTML report (rooflines, counts)")
      ->type_name("FILE.html");
  command.add_option("--sample", args.sample,
                     "threadgroups executed per launch; the rest are extrapolated (0: execute all)")
      ->capture_default_str();
}

void check_profile_output(const ProfileOutputArgs& args) { (void)chips_named(args.chips); }

void report_profiles(std::vector<profile::KernelWork> work, const ProfileOutputArgs& args, const std::string& title) {
  const std::vector<profile::Chip> chips = chips_named(args.chips);
  std::vector<profile::ProfiledKernel> profiled;
  for (profile::KernelWork& w : work) profiled.push_back(profile::predict_on(std::move(w), chips));
  const std::string json = profile::to_json(profiled).dump(2) + "\n";
  if (!args.json_file.empty()) write_text("--json-out", args.json_file, json);
  if (!args.report_file.empty()) write_text("--report", args.report_file, profile::html_report(profiled, title));
  fmt::print("{}", args.json ? json : profile::text_report(profiled));
}

}  // namespace mfagen::cli
