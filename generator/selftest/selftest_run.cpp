#include "selftest/selftest_run.h"

#include <algorithm>
#include <chrono>

#include "selftest/case_kernels.h"
#include "selftest/generated_kernels.h"

namespace mfagen::selftest {

size_t SelftestRun::passed() const {
  return size_t(std::count_if(results.begin(), results.end(), [](const CaseResult& r) { return r.passed(); }));
}

SelftestRun run_selftest(const std::vector<SelftestCase>& cases, Backend& backend, const RunOptions& options,
                         const std::function<void(const CaseResult&)>& on_result) {
  const auto start = std::chrono::steady_clock::now();
  SelftestRun run;
  const GeneratedKernels kernels(kernels_of(cases), "mfagen-selftest-");
  for (const SelftestCase& c : cases) {
    run.results.push_back(run_case(c, kernels.library(), backend, options));
    if (on_result) on_result(run.results.back());
  }
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace mfagen::selftest
