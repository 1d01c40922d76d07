// `mfagen bench` as a library: the built-in set has each kind at a small and
// a GPU-sized shape; on the cpu backend it times each kernel (one warm-up,
// then the repeats), predicts the same call for a chip, and its table and
// report label measured times as emulated and predicted ones as the model's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "mfagen/cpu_backend.h"
#include "profile/chip.h"
#include "selftest/bench_report.h"
#include "selftest/bench_run.h"

namespace mfagen::selftest {
namespace {

using ::testing::HasSubstr;

TEST(SelftestBench, BuiltinSetHasEachKindAtSmallAndGpuSizedShapes) {
  const std::vector<BenchCase> all = builtin_bench(false);
  std::set<std::string> names;
  std::set<spec::Kind> kinds;
  for (const BenchCase& c : all) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    kinds.insert(c.kernel.kind);
    EXPECT_FALSE(c.model.empty()) << c.name;
    const plan::CostShape &small = c.small, &large = c.large;
    EXPECT_LT(small.heads_q * small.seq_q * small.seq_k, large.heads_q * large.seq_q * large.seq_k) << c.name;
    EXPECT_GE(large.seq_k, 1024u) << c.name;
    EXPECT_LE(small.seq_k, 2048u) << c.name;
    if (c.kernel.kind == spec::Kind::decode) {
      EXPECT_LE(large.seq_q, kMaxDecodeQueries) << c.name;
    }
  }
  EXPECT_EQ(kinds.size(), 3u);
  const std::vector<BenchCase> quick = builtin_bench(true);
  EXPECT_EQ(quick.size(), 2u);
  for (const BenchCase& q : quick) EXPECT_TRUE(names.count(q.name)) << q.name;
}

TEST(SelftestBench, TimesAndPredictsEachQuickKernelOnTheCpuBackend) {
  CpuBackend backend(false);
  BenchOptions options;
  options.repeats = 2;
  options.chip = profile::find_chip("m1_max");
  int reported = 0;
  const std::vector<BenchResult> results =
      run_bench(builtin_bench(true), backend, options, [&](const BenchResult&) { ++reported; });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(reported, 2);
  for (const BenchResult& r : results) {
    EXPECT_TRUE(r.error.empty()) << r.name << ": " << r.error;
    EXPECT_EQ(r.seconds.size(), 2u) << r.name;
    EXPECT_GT(r.median_seconds, 0) << r.name;
    EXPECT_LE(r.best_seconds, r.median_seconds) << r.name;
    EXPECT_GT(r.predicted_seconds, 0) << r.name;
    EXPECT_DOUBLE_EQ(r.ratio(), r.median_seconds / r.predicted_seconds) << r.name;
    EXPECT_THAT(r.shape, HasSubstr("Hq")) << r.name;
  }
  EXPECT_EQ(results[0].launches, 1u);  // forward
  EXPECT_EQ(results[1].launches, 2u);  // decode: partials and merge
}

TEST(SelftestBench, TableAndReportLabelMeasuredAndPredictedTimes) {
  BenchResult ok;
  ok.name = "forward/fp16/d128/bottom_right";
  ok.model = "Llama 3 8B prefill, 4096 tokens";
  ok.kernel = "attn_fwd_f16_d128_causal_br_gqa";
  ok.shape = "B 1, Hq 4, Hkv 1, Sq 256, Sk 256, D 128";
  ok.launches = 1;
  ok.seconds = {0.2, 0.1, 0.3};
  ok.median_seconds = 0.2;
  ok.best_seconds = 0.1;
  ok.predicted_seconds = 1e-4;
  BenchResult failed;
  failed.name = "decode/fp16/d128/none";
  failed.model = "Llama 3 8B decode";
  failed.error = "compile error";
  const BenchLabels emulated{"emulation (cpu backend), not a GPU time", "model prediction for M1 Max", false};

  const auto rows = bench_rows({ok, failed}, emulated);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][3], "emulated time");
  EXPECT_EQ(rows[0][5], "model prediction");
  EXPECT_EQ(rows[1][3], "200 ms");
  EXPECT_EQ(rows[1][5], "100 µs");
  EXPECT_EQ(rows[1][6], "2000");
  EXPECT_EQ(rows[2][3], "error: compile error");
  const BenchLabels gpu{"GPU time (Metal command buffer timestamps)", "model prediction for M3 Max", true};
  EXPECT_EQ(bench_rows({ok}, gpu)[0][3], "GPU time");

  BenchOptions options;
  options.repeats = 3;
  const std::string preamble = bench_preamble({ok, failed}, options, emulated, "cpu");
  EXPECT_THAT(preamble, HasSubstr("measured: emulation (cpu backend), not a GPU time"));
  EXPECT_THAT(preamble, HasSubstr("predicted: model prediction for M1 Max"));
  EXPECT_THAT(preamble, HasSubstr("3 timed runs"));

  const ReportContext context{"0.1.0", "Linux x86_64", "cpu", "mfagen bench --quick"};
  const std::string md = bench_markdown({ok, failed}, options, emulated, context);
  EXPECT_THAT(md, HasSubstr("# mfagen bench"));
  EXPECT_THAT(md, HasSubstr("| measured times | emulation (cpu backend), not a GPU time |"));
  EXPECT_THAT(md, HasSubstr("| predicted times | model prediction for M1 Max |"));
  EXPECT_THAT(md,
              HasSubstr("| forward/fp16/d128/bottom_right | B 1, Hq 4, Hkv 1, Sq 256, Sk 256, D 128 | 1 | 200 ms |"));
  EXPECT_THAT(md, HasSubstr("| decode/fp16/d128/none | - | - | error: compile error |  |  |  |"));
  EXPECT_THAT(md, HasSubstr("- forward/fp16/d128/bottom_right: Llama 3 8B prefill, 4096 tokens (kernel "
                            "attn_fwd_f16_d128_causal_br_gqa)"));
}

}  // namespace
}  // namespace mfagen::selftest
