// What `mfagen selftest` prints and writes: a line per case with its max
// errors and bounds, why a failing case failed, a summary, and a Markdown
// report with the context, every case and each failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "selftest/selftest_report.h"

namespace mfagen::selftest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SelftestRun two_cases() {
  SelftestRun run;
  CaseResult pass;
  pass.name = "forward/fp16/d64/none";
  pass.call = "B 1, Hq 4, Hkv 2, Sq 40, Sk 72";
  pass.kernels = {{"attn_fwd_f16_d64_gqa", 1}};
  pass.checks = {{"out", true, 4.7e-4, 6.8e-3, "ok"}, {"lse", true, 5.2e-7, 5.6e-5, "ok"}};
  CaseResult fail = pass;
  fail.name = "backward/fp16/d64/none";
  fail.kernels.push_back({"attn_bwd_f16_d64_gqa", 3});
  fail.checks.push_back({"dq", false, 1.26, 1.3e-2, "dq: worst (b=0,h=2,i=0,d=0) kernel 1 reference -0.25\n"});
  fail.error_injected = true;
  CaseResult broken = pass;
  broken.name = "decode/fp16/d64/none/splits3";
  broken.checks.clear();
  broken.error = "selection chose attn_fwd_f16_d64_gqa for this call; the kernel meant is attn_decode_f16_d64_gqa";
  run.results = {pass, fail, broken};
  run.wall_seconds = 1.25;
  return run;
}

TEST(SelftestReport, CaseLinesGiveErrorsBoundsAndWhyACaseFailed) {
  const SelftestRun run = two_cases();
  const std::string pass = case_line(run.results[0]);
  EXPECT_THAT(pass, HasSubstr("PASS  forward/fp16/d64/none"));
  EXPECT_THAT(pass, HasSubstr("out 4.7e-04 (bound 6.8e-03)"));
  EXPECT_THAT(pass, HasSubstr("lse 5.2e-07 (bound 5.6e-05)"));
  EXPECT_EQ(std::count(pass.begin(), pass.end(), '\n'), 1);

  const std::string fail = case_line(run.results[1]);
  EXPECT_THAT(fail, HasSubstr("FAIL  backward/fp16/d64/none"));
  EXPECT_THAT(fail, HasSubstr("dq 1.3e+00 (bound 1.3e-02) FAIL"));
  EXPECT_THAT(fail, HasSubstr("error injected on purpose"));
  EXPECT_THAT(fail, HasSubstr("      dq: worst (b=0,h=2,i=0,d=0)"));
  EXPECT_THAT(fail, Not(HasSubstr("dq: dq:")));

  const std::string broken = case_line(run.results[2]);
  EXPECT_THAT(broken, HasSubstr("FAIL  decode/fp16/d64/none/splits3"));
  EXPECT_THAT(broken, HasSubstr("could not be judged"));
  EXPECT_THAT(broken, HasSubstr("selection chose attn_fwd_f16_d64_gqa"));

  EXPECT_EQ(text_summary(run), "3 cases: 1 passed, 2 failed (wall time 1.2 s)\n");
}

TEST(SelftestReport, MarkdownHasTheContextEveryCaseAndEachFailure) {
  const ReportContext context{"0.1.0", "Darwin 24.1.0 arm64, Apple M3 Max", "metal (the system's default Metal device)",
                              "mfagen selftest --backend metal"};
  const std::string md = markdown_report(two_cases(), context);
  EXPECT_THAT(md, HasSubstr("# mfagen selftest"));
  EXPECT_THAT(md, HasSubstr("| result | **FAIL**: 1 of 3 cases passed |"));
  EXPECT_THAT(md, HasSubstr("| mfagen | 0.1.0 |"));
  EXPECT_THAT(md, HasSubstr("| machine | Darwin 24.1.0 arm64, Apple M3 Max |"));
  EXPECT_THAT(md, HasSubstr("| backend | metal (the system's default Metal device) |"));
  EXPECT_THAT(md, HasSubstr("| command | `mfagen selftest --backend metal` |"));
  EXPECT_THAT(md, HasSubstr("DESIGN.md section 3"));
  EXPECT_THAT(md, HasSubstr("| forward/fp16/d64/none | pass | B 1, Hq 4, Hkv 2, Sq 40, Sk 72 | attn_fwd_f16_d64_gqa "
                            "(1 launch) | out 4.7e-04 (bound 6.8e-03); lse 5.2e-07 (bound 5.6e-05) |"));
  EXPECT_THAT(md, HasSubstr("attn_bwd_f16_d64_gqa (3 launches)"));
  EXPECT_THAT(md, HasSubstr("## Failures"));
  EXPECT_THAT(md, HasSubstr("### backward/fp16/d64/none"));
  EXPECT_THAT(md, HasSubstr("### decode/fp16/d64/none/splits3"));

  SelftestRun passing = two_cases();
  passing.results.resize(1);
  const std::string ok = markdown_report(passing, context);
  EXPECT_THAT(ok, HasSubstr("| result | **PASS**: 1 of 1 cases passed |"));
  EXPECT_THAT(ok, Not(HasSubstr("## Failures")));
}

TEST(SelftestReport, AnEmptyRunIsNotAPass) {
  EXPECT_FALSE(SelftestRun{}.ok());
  CaseResult unjudged;
  EXPECT_FALSE(unjudged.passed());  // no check ran
}

}  // namespace
}  // namespace mfagen::selftest
