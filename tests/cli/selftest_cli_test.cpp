// `mfagen selftest` and `mfagen bench` end to end, as a user on a Mac would
// run them, here on the cpu backend (and on the Metal stand-in where the
// build has it): the quick matrix passes and its report lists every case;
// an injected error fails its case with exit status 1; bench prints its
// times labelled as an emulation beside the model's predictions; bad
// options are clear errors with exit status 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mfagen_cli_test.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// The quick matrix's cases.
const std::vector<std::string> kQuickCases = {"forward/fp16/d64/bottom_right", "forward/fp16/d64/none/bool_mask",
                                              "decode/fp16/d64/none/splits3", "cache_append/fp16/d64/paged_q8_0",
                                              "backward/fp16/d64/none"};

class SelftestCli : public test::MfagenCliTest {
 protected:
  static bool no_metal(const test::ProcessResult& r) {
    return r.exit_code == 1 && r.err.find("has no Metal backend") != std::string::npos;
  }
};

TEST_F(SelftestCli, QuickPassesOnTheCpuBackendAndWritesAReport) {
  const fs::path report = dir_ / "reports" / "selftest.md";
  fs::create_directories(report.parent_path());
  const auto r = mfagen({"selftest", "--quick", "--report", report.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("through the cpu backend"));
  EXPECT_THAT(r.out, HasSubstr("detectors on"));
  for (const std::string& name : kQuickCases) EXPECT_THAT(r.out, HasSubstr("PASS  " + name)) << name;
  EXPECT_THAT(r.out, HasSubstr("5 cases: 5 passed, 0 failed"));
  EXPECT_THAT(r.out, Not(HasSubstr("FAIL")));

  const std::string md = read_text(report);
  EXPECT_THAT(md, HasSubstr("# mfagen selftest"));
  EXPECT_THAT(md, HasSubstr("| result | **PASS**: 5 of 5 cases passed |"));
  EXPECT_THAT(md, HasSubstr("| mfagen | 0.1.0 |"));
  EXPECT_THAT(md, HasSubstr("| machine | "));
  EXPECT_THAT(md, HasSubstr("| backend | cpu "));
  EXPECT_THAT(md, HasSubstr("| command | `mfagen selftest --backend cpu --quick --report "));
  for (const std::string& name : kQuickCases) EXPECT_THAT(md, HasSubstr("| " + name + " | pass |")) << name;
  EXPECT_THAT(md, HasSubstr("attn_bwd_f16_d64_gqa (3 launches)"));
  EXPECT_THAT(md, HasSubstr("attn_decode_f16_d64_gqa (2 launches)"));
  // Written atomically: nothing but the report is left in its directory.
  EXPECT_EQ(std::distance(fs::directory_iterator(report.parent_path()), fs::directory_iterator{}), 1);
}

TEST_F(SelftestCli, AnInjectedErrorFailsItsCaseAndTheExitStatusIsOne) {
  const fs::path report = dir_ / "selftest.md";
  const auto r = mfagen({"selftest", "--quick", "--filter", "fp16/d64/", "--inject-error", "decode/", "--report",
                         report.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL  decode/fp16/d64/none/splits3"));
  EXPECT_THAT(r.out, HasSubstr("error injected on purpose"));
  EXPECT_THAT(r.out, HasSubstr("PASS  forward/fp16/d64/bottom_right"));
  EXPECT_THAT(r.out, HasSubstr("5 cases: 4 passed, 1 failed"));
  const std::string md = read_text(report);  // written whatever the verdict
  EXPECT_THAT(md, HasSubstr("| result | **FAIL**: 4 of 5 cases passed |"));
  EXPECT_THAT(md, HasSubstr("| decode/fp16/d64/none/splits3 | **FAIL** |"));
  EXPECT_THAT(md, HasSubstr("## Failures"));
  EXPECT_THAT(md, HasSubstr("--inject-error decode/"));
}

TEST_F(SelftestCli, FilterAndListNameTheCases) {
  const auto list = mfagen({"selftest", "--list", "--filter", "backward/"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("backward/fp32/d64/top_left"));
  EXPECT_THAT(list.out, HasSubstr("attn_bwd_f32_d64_causal_tl_gqa"));
  EXPECT_THAT(list.out, Not(HasSubstr("forward/")));
  const auto none = mfagen({"selftest", "--filter", "no-such-case"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("--filter no-such-case: no case of the full matrix has it in its name"));
}

TEST_F(SelftestCli, BadOptionsAreClearErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"selftest", "--backend", "vulkan"}, "--backend vulkan: expected cpu or metal"},
      {{"bench", "--backend", "vulkan"}, "--backend vulkan: expected cpu or metal"},
      {{"bench", "--chip", "m9"}, "--chip m9: unknown chip \"m9\"; valid chips:"},
      {{"bench", "--size", "huge"}, "--size huge: expected small or large"},
      {{"bench", "--repeat", "0"}, "--repeat 0: expected at least 1 timed run"},
      {{"selftest", "--quick", "--filter", "decode", "--report", (dir_ / "missing" / "r.md").string()},
       "cannot write the report"},
  };
  for (const Case& c : cases) {
    const auto r = mfagen(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.message << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
}

TEST_F(SelftestCli, MetalBackendPassesOnTheStandInOrIsAClearError) {
  const auto r = mfagen({"selftest", "--quick", "--backend", "metal", "--filter", "decode"});
  if (no_metal(r)) GTEST_SKIP() << "this build has no Metal backend: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("through the metal backend"));
  EXPECT_THAT(r.out, HasSubstr("PASS  decode/fp16/d64/none/splits3"));
}

TEST_F(SelftestCli, BenchQuickPrintsEmulationLabelledTimesBesideModelPredictions) {
  const fs::path report = dir_ / "bench.md";
  const auto r = mfagen({"bench", "--quick", "--repeat", "2", "--chip", "m1_max", "--report", report.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 kernels through the cpu backend at small shapes, 2 timed runs each"));
  EXPECT_THAT(r.out, HasSubstr("measured: emulation (cpu backend), not a GPU time"));
  EXPECT_THAT(r.out, HasSubstr("predicted: model prediction for M1 Max (--chip)"));
  EXPECT_THAT(r.out, HasSubstr("emulated time"));
  EXPECT_THAT(r.out, HasSubstr("model prediction"));
  EXPECT_THAT(r.out, HasSubstr("measured/predicted"));
  EXPECT_THAT(r.out, Not(HasSubstr("GPU time (Metal")));
  EXPECT_THAT(r.out, HasSubstr("forward/fp16/d128/bottom_right  B 1, Hq 4, Hkv 1, Sq 256, Sk 256, D 128"));
  EXPECT_THAT(r.out, HasSubstr("decode/fp16/d128/none"));
  const std::string md = read_text(report);
  EXPECT_THAT(md, HasSubstr("# mfagen bench"));
  EXPECT_THAT(md, HasSubstr("| measured times | emulation (cpu backend), not a GPU time |"));
  EXPECT_THAT(md, HasSubstr("| predicted times | model prediction for M1 Max"));
  EXPECT_THAT(md, HasSubstr("| forward/fp16/d128/bottom_right |"));
  EXPECT_THAT(md, HasSubstr("Llama 3 8B decode"));
}

TEST_F(SelftestCli, BenchOnTheMetalStandInSaysItsTimesAreAnEmulation) {
  const auto r = mfagen({"bench", "--quick", "--backend", "metal", "--size", "small", "--repeat", "1"});
  if (no_metal(r)) GTEST_SKIP() << "this build has no Metal backend: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
#ifndef __APPLE__
  EXPECT_THAT(r.out, HasSubstr("measured: emulation (Metal stand-in), not a GPU time"));
  EXPECT_THAT(r.out, HasSubstr("emulated time"));
#endif
}

}  // namespace
}  // namespace mfagen
