// `mfagen selftest` as a library on the cpu backend: the quick matrix passes
// with every detector on, decode runs two launches and backward three, and
// the judgement can fail: an injected error fails every check of its case,
// and a library that cannot give a case its own kernel fails the case.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mfagen/cpu_backend.h"
#include "selftest/builtin_matrix.h"
#include "selftest/case_kernels.h"
#include "selftest/generated_kernels.h"
#include "selftest/run_case.h"
#include "selftest/selftest_run.h"

namespace mfagen::selftest {
namespace {

using ::testing::HasSubstr;

const CaseResult* find(const SelftestRun& run, const std::string& name_part) {
  for (const CaseResult& r : run.results)
    if (r.name.find(name_part) != std::string::npos) return &r;
  return nullptr;
}

std::vector<std::string> tensors(const CaseResult& r) {
  std::vector<std::string> names;
  for (const Check& c : r.checks) names.push_back(c.tensor);
  return names;
}

TEST(SelftestRun, QuickMatrixPassesOnTheCpuBackendWithDetectors) {
  CpuBackend backend(true);
  const std::vector<SelftestCase> cases = builtin_matrix(MatrixSize::quick);
  std::vector<std::string> seen;
  const SelftestRun run = run_selftest(cases, backend, {}, [&](const CaseResult& r) { seen.push_back(r.name); });
  ASSERT_EQ(run.results.size(), cases.size());
  EXPECT_EQ(seen.size(), cases.size());
  EXPECT_TRUE(run.ok());
  EXPECT_EQ(run.passed(), cases.size());
  for (const CaseResult& r : run.results) {
    EXPECT_TRUE(r.passed()) << r.name << ": " << r.error;
    EXPECT_FALSE(r.error_injected);
    for (const Check& c : r.checks) EXPECT_LE(c.max_abs_error, c.bound) << r.name << " " << c.tensor;
  }

  const CaseResult* decode = find(run, "decode/");
  ASSERT_NE(decode, nullptr);
  ASSERT_EQ(decode->kernels.size(), 1u);
  EXPECT_EQ(decode->kernels[0].launches, 2u);  // partials, then the merge
  EXPECT_THAT(decode->kernels[0].kernel, HasSubstr("attn_decode_"));
  EXPECT_EQ(tensors(*decode), (std::vector<std::string>{"out", "lse"}));

  const CaseResult* backward = find(run, "backward/");
  ASSERT_NE(backward, nullptr);
  ASSERT_EQ(backward->kernels.size(), 2u);
  EXPECT_EQ(backward->kernels[0].launches, 1u);  // the forward, for out and lse
  EXPECT_EQ(backward->kernels[1].launches, 3u);  // preprocess, dK/dV, dQ
  EXPECT_THAT(backward->kernels[1].kernel, HasSubstr("attn_bwd_"));
  EXPECT_EQ(tensors(*backward), (std::vector<std::string>{"out", "lse", "dq", "dk", "dv"}));
}

TEST(SelftestRun, AnInjectedErrorFailsEveryCheckOfItsCaseAndNoOther) {
  CpuBackend backend(true);
  const std::vector<SelftestCase> cases = filter_cases(builtin_matrix(MatrixSize::quick), "fp16/d64/");
  RunOptions options;
  options.inject_error = "backward/";
  const SelftestRun run = run_selftest(cases, backend, options);
  EXPECT_FALSE(run.ok());
  EXPECT_EQ(run.failed(), 1u);
  const CaseResult* broken = find(run, "backward/");
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(broken->error_injected);
  EXPECT_TRUE(broken->error.empty()) << broken->error;  // it ran; the judgement failed it
  ASSERT_EQ(broken->checks.size(), 5u);
  for (const Check& c : broken->checks) {
    EXPECT_FALSE(c.ok) << c.tensor;
    EXPECT_GT(c.max_abs_error, c.bound) << c.tensor;
    EXPECT_THAT(c.detail, HasSubstr("(b=")) << c.tensor;  // names the worst element
  }
  for (const CaseResult& r : run.results) {
    if (&r != broken) {
      EXPECT_TRUE(r.passed()) << r.name;
    }
  }
}

// A library that lacks the case's kernel: selection answers with another
// one (here the kernel with lse for a case of the kernel without), which
// would judge the wrong kernel, so the case fails saying so.
TEST(SelftestRun, ACaseFailsWhenSelectionGivesItAnotherKernel) {
  const std::vector<SelftestCase> no_lse = filter_cases(builtin_matrix(MatrixSize::full), "/no_lse");
  ASSERT_EQ(no_lse.size(), 1u);
  spec::KernelSpec with_lse = no_lse[0].kernel;
  with_lse.lse = true;
  with_lse.name = "attn_fwd_with_lse";
  const GeneratedKernels kernels({with_lse}, "mfagen-selftest-test-");
  CpuBackend backend(true);
  const CaseResult r = run_case(no_lse[0], kernels.library(), backend);
  EXPECT_FALSE(r.passed());
  EXPECT_THAT(r.error, HasSubstr("selection chose attn_fwd_with_lse"));
  EXPECT_THAT(r.error, HasSubstr(no_lse[0].kernel.name));
  EXPECT_TRUE(r.checks.empty());
}

TEST(SelftestRun, ACaseWithNoKernelAtAllFailsWithTheSelectionError) {
  const std::vector<SelftestCase> decode = filter_cases(builtin_matrix(MatrixSize::quick), "decode/");
  ASSERT_EQ(decode.size(), 1u);
  spec::KernelSpec other = decode[0].kernel;
  other.dtype = spec::DType::float32;
  other.name = "attn_decode_other";
  const GeneratedKernels kernels({other}, "mfagen-selftest-test-");
  CpuBackend backend(true);
  const CaseResult r = run_case(decode[0], kernels.library(), backend);
  EXPECT_FALSE(r.passed());
  EXPECT_FALSE(r.error.empty());
}

TEST(SelftestRun, GeneratedKernelsAreOnDiskOnceEachUntilTheObjectGoes) {
  std::vector<spec::KernelSpec> specs = kernels_of(builtin_matrix(MatrixSize::quick));
  const size_t distinct = specs.size();
  specs.push_back(specs.front());  // equal names: generated once
  std::filesystem::path dir;
  {
    const GeneratedKernels kernels(specs, "mfagen-selftest-test-");
    dir = kernels.directory();
    EXPECT_EQ(kernels.library().kernels().size(), distinct);
    EXPECT_TRUE(std::filesystem::exists(dir / "manifest.json"));
    for (const KernelEntry& k : kernels.library().kernels())
      EXPECT_TRUE(std::filesystem::exists(kernels.library().directory() / k.file)) << k.file;
    EXPECT_TRUE(std::filesystem::equivalent(kernels.library().directory(), dir));
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace mfagen::selftest
