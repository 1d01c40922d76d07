// What `mfagen profile` prints: the counted work of each kernel call and the
// cost model's predictions, as JSON (for scripts) and as aligned plain text
// (for the terminal). Every time here is a model prediction, never a
// measurement on an Apple GPU (DESIGN.md section 14, docs/cost_model.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/kernel_work.h"
#include "profile/prediction.h"

namespace mfagen::profile {

// One profiled kernel call: what it executes and what it is predicted to
// take on each chip.
struct ProfiledKernel {
  KernelWork work;
  std::vector<Prediction> predictions;
};

// {"model": ..., "kernels": [...]}; ops list only nonzero counts, keyed by
// cpu::profile::kOpNames. Counts that are whole numbers are written as
// integers, so the JSON reads like counts.
nlohmann::json to_json(const std::vector<ProfiledKernel>& kernels);

// Per kernel: shape, per launch its grid and main counts, one row per chip;
// with several kernels, a side-by-side comparison of predicted times.
std::string text_report(const std::vector<ProfiledKernel>& kernels);

// The reports' time format: three significant digits in ns, µs, ms or s.
std::string format_seconds(double seconds);

}  // namespace mfagen::profile
