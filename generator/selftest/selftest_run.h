// `mfagen selftest` as a library: the cases' kernels generated into a
// temporary directory and loaded as an app loads them, then every case run
// through the given backend and judged (run_case.h).
#pragma once

#include <functional>
#include <vector>

#include "mfagen/backend.h"
#include "selftest/case_result.h"
#include "selftest/run_case.h"
#include "selftest/selftest_case.h"

namespace mfagen::selftest {

struct SelftestRun {
  std::vector<CaseResult> results;  // in case order
  double wall_seconds = 0;          // generation, compilation, runs and judgement

  size_t passed() const;
  size_t failed() const { return results.size() - passed(); }
  bool ok() const { return !results.empty() && failed() == 0; }
};

// `on_result` (optional) sees each case as soon as it is judged, for
// progress on a terminal. Generating the kernels can throw (a planner or
// I/O error: a bug or the environment, not a case's failure).
SelftestRun run_selftest(const std::vector<SelftestCase>& cases, Backend& backend, const RunOptions& options = {},
                         const std::function<void(const CaseResult&)>& on_result = {});

}  // namespace mfagen::selftest
