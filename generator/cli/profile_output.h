// The options `mfagen profile` and `mfagen exec --profile` share: which chips
// to predict for, how many threadgroups to execute, and where the report
// goes (terminal text, JSON, self-contained HTML).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile/chip.h"
#include "profile/kernel_work.h"

namespace CLI {
class App;
}

namespace mfagen::cli {

// Threadgroups a profile executes per launch unless told (fits B=1, Hq=32,
// 8192 tokens in under a minute here; docs/profile.md).
inline constexpr uint64_t kDefaultProfileSample = 32;

struct ProfileOutputArgs {
  std::string chips = "all";
  bool json = false;        // JSON on stdout instead of text
  std::string json_file;    // also write JSON here
  std::string report_file;  // also write the HTML report here
  uint64_t sample = kDefaultProfileSample;  // threadgroups executed per launch (0: all)
};

void add_profile_output_options(CLI::App& command, ProfileOutputArgs& args);

// The chips `--chip VALUE` names (UserError naming the option and the valid chips).
std::vector<profile::Chip> chips_named(const std::string& value);

// Checks the chip names before anything slow runs (UserError).
void check_profile_output(const ProfileOutputArgs& args);

// Predicts every counted call on the chosen chips and prints / writes the reports.
void report_profiles(std::vector<profile::KernelWork> work, const ProfileOutputArgs& args, const std::string& title);

}  // namespace mfagen::cli
