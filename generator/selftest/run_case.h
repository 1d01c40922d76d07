// One selftest case end to end, as an app makes the call: the runtime
// selects the kernel by query and plans its dispatch, the backend runs it on
// the case's seeded inputs, and every output is judged against the float64
// reference with the tolerance rule of DESIGN.md section 3.
#pragma once

#include <string>

#include "mfagen/backend.h"
#include "mfagen/library.h"
#include "selftest/case_result.h"
#include "selftest/selftest_case.h"

namespace mfagen::selftest {

struct RunOptions {
  // A check of the checker: in every case whose name contains this
  // substring (empty: none), one element of each judged tensor is changed
  // after the kernel ran and before it is judged, so those cases must fail.
  std::string inject_error;
};

// Never throws for a problem of the case (selection, dispatch, compile
// errors, detector findings): those fail the case with CaseResult::error.
// `library` must hold the case's kernels (kernels_of, GeneratedKernels).
CaseResult run_case(const SelftestCase& c, const Library& library, Backend& backend, const RunOptions& options = {});

}  // namespace mfagen::selftest
