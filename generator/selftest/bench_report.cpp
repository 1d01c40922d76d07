#include "selftest/bench_report.h"

#include <fmt/format.h>

#include "profile/profile_json.h"

namespace mfagen::selftest {
namespace {

std::string markdown_row(const std::vector<std::string>& cells) {
  std::string row = "|";
  for (const std::string& c : cells) row += " " + c + " |";
  return row + "\n";
}

}  // namespace

std::string bench_preamble(const std::vector<BenchResult>& results, const BenchOptions& options,
                           const BenchLabels& labels, const std::string& backend) {
  return fmt::format(
      "{} kernels through the {} backend at {} shapes, {} timed run{} each after one warm-up run\n"
      "measured: {} (median and best of the runs)\n"
      "predicted: {}\n",
      results.size(), backend, options.size == BenchSize::small ? "small" : "large (GPU-sized)", options.repeats,
      options.repeats == 1 ? "" : "s", labels.measured, labels.predicted);
}

std::vector<std::vector<std::string>> bench_rows(const std::vector<BenchResult>& results, const BenchLabels& labels) {
  std::vector<std::vector<std::string>> rows = {{"case", "shape", "launches",
                                                 labels.gpu_time ? "GPU time" : "emulated time", "best",
                                                 "model prediction", "measured/predicted"}};
  for (const BenchResult& r : results) {
    if (!r.error.empty()) {
      rows.push_back({r.name, r.shape.empty() ? "-" : r.shape, "-", "error: " + r.error});
      continue;
    }
    rows.push_back({r.name, r.shape, std::to_string(r.launches), profile::format_seconds(r.median_seconds),
                    profile::format_seconds(r.best_seconds), profile::format_seconds(r.predicted_seconds),
                    r.ratio() >= 100 ? fmt::format("{:.0f}", r.ratio()) : fmt::format("{:.3g}", r.ratio())});
  }
  return rows;
}

std::string bench_markdown(const std::vector<BenchResult>& results, const BenchOptions& options,
                           const BenchLabels& labels, const ReportContext& context) {
  std::string md = "# mfagen bench\n\n| | |\n|---|---|\n";
  md += fmt::format("| mfagen | {} |\n| machine | {} |\n| backend | {} |\n| command | `{}` |\n",
                    context.mfagen_version, context.machine, context.backend, context.command);
  md += fmt::format("| measured times | {} |\n| predicted times | {} |\n\n", labels.measured, labels.predicted);
  md += fmt::format("{} timed run{} per kernel after one warm-up run; measured is their median, best their minimum.\n"
                    "Each kernel runs on the synthetic inputs `mfagen profile` counts, so measured and predicted are\n"
                    "the same call.\n\n",
                    options.repeats, options.repeats == 1 ? "" : "s");
  const std::vector<std::vector<std::string>> rows = bench_rows(results, labels);
  md += markdown_row(rows.front());
  md += markdown_row(std::vector<std::string>(rows.front().size(), "---"));
  for (size_t i = 1; i < rows.size(); ++i) {
    std::vector<std::string> row = rows[i];
    row.resize(rows.front().size());
    md += markdown_row(row);
  }
  md += "\nWhere the shapes come from:\n\n";
  for (const BenchResult& r : results)
    md += fmt::format("- {}: {}{}\n", r.name, r.model, r.kernel.empty() ? "" : fmt::format(" (kernel {})", r.kernel));
  return md;
}

}  // namespace mfagen::selftest
