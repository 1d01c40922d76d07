// What `mfagen selftest` prints and writes: a line per case for the
// terminal, a summary, and a Markdown report to paste into an issue. Apart
// from the wall time, identical runs give identical text.
#pragma once

#include <string>

#include "selftest/case_result.h"
#include "selftest/report_context.h"
#include "selftest/selftest_run.h"

namespace mfagen::selftest {

// "PASS  forward/fp16/d64/none   out 3.1e-04 (bound 1.2e-03)  lse ...", and
// for a failing case indented lines saying why. Ends with a newline.
std::string case_line(const CaseResult& result);

// "31 cases: 31 passed, 0 failed (wall time 41.2 s)". Ends with a newline.
std::string text_summary(const SelftestRun& run);

// The whole run: context, the tolerance rule, a table of every case and the
// details of each failure.
std::string markdown_report(const SelftestRun& run, const ReportContext& context);

}  // namespace mfagen::selftest
