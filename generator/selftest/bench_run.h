// `mfagen bench` as a library: each built-in kernel generated, loaded,
// selected and planned as an app would, run through a backend a few times
// on the profile's synthetic inputs, and set beside the cost model's
// prediction for one chip (generator/profile) of that very call.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mfagen/backend.h"
#include "profile/chip.h"
#include "selftest/bench_case.h"

namespace mfagen::selftest {

struct BenchOptions {
  BenchSize size = BenchSize::small;
  uint32_t repeats = 5;              // timed runs after one untimed warm-up (compilation, pipelines)
  profile::Chip chip;                // the prediction's chip
  uint64_t sample_threadgroups = 32;  // threadgroups the profile executes per launch (0: all)
};

struct BenchResult {
  std::string name, model;
  std::string kernel;          // the kernel selection chose (the case's own)
  std::string shape;           // the call in words, as the profile states it
  uint32_t launches = 0;
  std::vector<double> seconds;  // each timed run, as the backend measured it (RunStats::seconds)
  double median_seconds = 0, best_seconds = 0;
  double predicted_seconds = 0;  // the cost model's prediction for BenchOptions::chip
  std::string error;             // why the case could not be timed or predicted

  // measured / predicted; 0 when either is missing.
  double ratio() const { return predicted_seconds > 0 ? median_seconds / predicted_seconds : 0; }
};

// Never throws for one case's problem (compile errors, selection, the
// backend): it is the result's `error`. Generating the kernels can throw.
std::vector<BenchResult> run_bench(const std::vector<BenchCase>& cases, Backend& backend, const BenchOptions& options,
                                   const std::function<void(const BenchResult&)>& on_result = {});

}  // namespace mfagen::selftest
