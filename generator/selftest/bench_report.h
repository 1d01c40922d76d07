// What `mfagen bench` prints and writes. Measured and predicted times are
// never confused: each column says which it is, the measured one whether it
// is a GPU's time or an emulation's (the cpu backend, the Metal stand-in),
// the predicted one that it is a model's.
#pragma once

#include <string>
#include <vector>

#include "selftest/bench_run.h"
#include "selftest/report_context.h"

namespace mfagen::selftest {

struct BenchLabels {
  std::string measured;   // e.g. "emulation (cpu backend), not a GPU time"
  std::string predicted;  // e.g. "model prediction for M3 Max (mfagen's cost model), not a measurement"
  bool gpu_time = false;  // measured times are a GPU's (Backend::measures_gpu_time)
};

// The lines above the table: what ran, how often, and what each time is.
std::string bench_preamble(const std::vector<BenchResult>& results, const BenchOptions& options,
                           const BenchLabels& labels, const std::string& backend);

// The table, header row first: case, shape, launches, measured median and
// best (headed "GPU time" or "emulated time"), predicted (headed as the
// model's), measured/predicted; or the error.
std::vector<std::vector<std::string>> bench_rows(const std::vector<BenchResult>& results, const BenchLabels& labels);

// The Markdown report: context, preamble, the table, each case's model source.
std::string bench_markdown(const std::vector<BenchResult>& results, const BenchOptions& options,
                           const BenchLabels& labels, const ReportContext& context);

}  // namespace mfagen::selftest
