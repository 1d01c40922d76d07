// What a selftest case found: per judged tensor its max error and the bound
// the tolerance rule of DESIGN.md section 3 allowed, or why the case could
// not be judged at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mfagen::selftest {

// One tensor judged against the float64 reference.
struct Check {
  std::string tensor;        // out, lse, dq, dk, dv
  bool ok = false;
  double max_abs_error = 0;  // +inf if the kernel wrote NaN or Inf
  double bound = 0;          // out: 2x the naive in-dtype error + 1e-5; gradients 3x; lse: 1e-5 (1 + |ref|)
  std::string detail;        // the worst element and, on failure, each rule that failed
};

// One kernel the case ran, with the launches of its dispatch plan
// (forward 1, decode 2: partials and merge, backward 3).
struct KernelRun {
  std::string kernel;
  uint32_t launches = 0;
};

struct CaseResult {
  std::string name;
  std::string call;                // the case's shape and runtime values in words
  std::vector<KernelRun> kernels;  // in the order they ran
  std::vector<Check> checks;
  std::string error;               // why the case could not be judged: selection, dispatch, compile, detector findings
  bool error_injected = false;     // RunOptions::inject_error changed its outputs on purpose
  double seconds = 0;              // execution as the backend measured it (RunStats::seconds), summed

  bool passed() const {
    if (!error.empty() || checks.empty()) return false;
    for (const Check& c : checks)
      if (!c.ok) return false;
    return true;
  }
};

}  // namespace mfagen::selftest
