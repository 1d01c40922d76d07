// The built-in matrix of `mfagen selftest` covers what DESIGN.md asks of a
// kernel: every dtype and causal mode, head dims, GQA, each feature, decode
// and backward; names are unique and filterable; every case plans and has
// inputs the float64 reference accepts.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <set>
#include <string>

#include "attention_reference.h"
#include "plan/kernel_plan.h"
#include "selftest/builtin_matrix.h"
#include "selftest/case_inputs.h"
#include "selftest/case_kernels.h"
#include "spec/canonical.h"

namespace mfagen::selftest {
namespace {

using spec::Causal;
using spec::DType;
using spec::Kind;

const std::vector<SelftestCase>& full() {
  static const std::vector<SelftestCase> cases = builtin_matrix(MatrixSize::full);
  return cases;
}

bool any(const std::vector<SelftestCase>& cases, const std::function<bool(const SelftestCase&)>& is) {
  return std::any_of(cases.begin(), cases.end(), is);
}

TEST(SelftestMatrix, NamesAreUniqueAndSayKindDtypeHeadDimAndCausalMode) {
  std::set<std::string> names;
  for (const SelftestCase& c : full()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    const std::string prefix = std::string(spec::to_string(c.kernel.kind)) + "/";
    EXPECT_EQ(c.name.rfind(prefix, 0), 0u) << c.name;
    // Cache writes have no causal mode: their names stop at the head dim (and a suffix).
    const std::string dims = c.kernel.kind == spec::Kind::cache_append
                                 ? fmt::format("/d{}", c.kernel.head_dim)
                                 : fmt::format("/d{}/{}", c.kernel.head_dim, spec::to_string(c.kernel.causal));
    EXPECT_NE(c.name.find(dims), std::string::npos) << c.name;
    EXPECT_EQ(c.kernel.name, spec::derived_name(c.kernel)) << c.name;
  }
}

TEST(SelftestMatrix, ForwardCoversEveryDtypeWithEveryCausalMode) {
  for (DType t : spec::kAllDTypes)
    for (Causal causal : spec::kAllCausals)
      EXPECT_TRUE(any(full(), [&](const SelftestCase& c) {
        return c.kernel.kind == Kind::forward && c.kernel.dtype == t && c.kernel.causal == causal;
      })) << spec::to_string(t) << " " << spec::to_string(causal);
}

TEST(SelftestMatrix, CoversHeadDims64And128AndOneNotAPowerOfTwo) {
  for (uint32_t d : {64u, 128u})
    EXPECT_TRUE(any(full(), [&](const SelftestCase& c) { return c.kernel.head_dim == d; })) << d;
  EXPECT_TRUE(any(full(), [](const SelftestCase& c) { return std::popcount(c.kernel.head_dim) != 1; }));
}

TEST(SelftestMatrix, CoversGqaMqaAndKernelsWithoutGqa) {
  EXPECT_TRUE(any(full(), [](const SelftestCase& c) {
    return c.shape.heads_q > c.shape.heads_kv && c.shape.heads_kv > 1;
  }));
  EXPECT_TRUE(any(full(), [](const SelftestCase& c) { return c.shape.heads_q > 1 && c.shape.heads_kv == 1; }));
  EXPECT_TRUE(any(full(), [](const SelftestCase& c) { return !c.kernel.gqa; }));
  for (const SelftestCase& c : full()) {
    EXPECT_EQ(c.shape.heads_q % c.shape.heads_kv, 0u) << c.name;
    if (!c.kernel.gqa) {
      EXPECT_EQ(c.shape.heads_q, c.shape.heads_kv) << c.name;
    }
  }
}

TEST(SelftestMatrix, CoversEachFeatureAloneAndAllTogether) {
  auto alone = [](const SelftestCase& c) {
    return int(c.kernel.mask != spec::MaskKind::none) + c.kernel.window + c.kernel.softcap + c.kernel.alibi == 1;
  };
  for (spec::MaskKind mask : {spec::MaskKind::boolean, spec::MaskKind::additive})
    EXPECT_TRUE(any(full(), [&](const SelftestCase& c) { return alone(c) && c.kernel.mask == mask; }))
        << spec::to_string(mask);
  EXPECT_TRUE(any(full(), [&](const SelftestCase& c) { return alone(c) && c.kernel.window; }));
  EXPECT_TRUE(any(full(), [&](const SelftestCase& c) { return alone(c) && c.kernel.softcap && c.softcap > 0; }));
  EXPECT_TRUE(any(full(), [&](const SelftestCase& c) { return alone(c) && c.kernel.alibi; }));
  EXPECT_TRUE(any(full(), [](const SelftestCase& c) { return !c.kernel.lse; }));
  for (Kind kind : {Kind::forward, Kind::backward})
    EXPECT_TRUE(any(full(), [&](const SelftestCase& c) {
      return c.kernel.kind == kind && c.kernel.mask != spec::MaskKind::none && c.kernel.window && c.kernel.softcap &&
             c.kernel.alibi;
    })) << spec::to_string(kind);
}

TEST(SelftestMatrix, DecodeCasesHaveFewQueriesAndSeveralKeySplits) {
  int decode = 0;
  for (const SelftestCase& c : full()) {
    if (c.kernel.kind != Kind::decode) continue;
    ++decode;
    EXPECT_LE(c.shape.seq_q, kMaxDecodeQueries) << c.name;
    EXPECT_GT(c.shape.seq_k, 256u) << c.name;  // more than one split's worth when chosen from the shape
    EXPECT_NE(c.splits, 1u) << c.name;
  }
  EXPECT_GE(decode, 2);
}

TEST(SelftestMatrix, BackwardInEveryDtype) {
  for (DType t : spec::kAllDTypes)
    EXPECT_TRUE(any(full(), [&](const SelftestCase& c) {
      return c.kernel.kind == Kind::backward && c.kernel.dtype == t;
    })) << spec::to_string(t);
}

TEST(SelftestMatrix, QuickIsAHandfulOfTheFullCasesWithEachKind) {
  const std::vector<SelftestCase> quick = builtin_matrix(MatrixSize::quick);
  EXPECT_GE(quick.size(), 3u);
  EXPECT_LE(quick.size(), 6u);
  for (const SelftestCase& q : quick)
    EXPECT_TRUE(any(full(), [&](const SelftestCase& c) { return c.name == q.name && c.seed == q.seed; })) << q.name;
  for (Kind kind : spec::kAllKinds)
    EXPECT_TRUE(any(quick, [&](const SelftestCase& c) { return c.kernel.kind == kind; })) << spec::to_string(kind);
  EXPECT_TRUE(any(quick, [](const SelftestCase& c) { return c.kernel.mask != spec::MaskKind::none; }));
}

TEST(SelftestMatrix, FilterKeepsTheNamesHoldingTheSubstring) {
  const std::vector<SelftestCase> fp16 = filter_cases(full(), "/fp16/");
  ASSERT_FALSE(fp16.empty());
  for (const SelftestCase& c : fp16) EXPECT_EQ(c.kernel.dtype, DType::float16) << c.name;
  // "fp16" is not part of "bf16": a dtype filter needs no slashes.
  EXPECT_EQ(filter_cases(full(), "fp16").size(), fp16.size());
  EXPECT_EQ(filter_cases(full(), "").size(), full().size());
  EXPECT_TRUE(filter_cases(full(), "no such case").empty());
}

TEST(SelftestMatrix, EveryKernelPlansAndEveryCaseHasValidInputs) {
  for (const spec::KernelSpec& k : kernels_of(full())) EXPECT_NO_THROW(plan::plan_kernel(k)) << k.name;
  for (const SelftestCase& c : full()) {
    const CaseInputs in = make_inputs(c);
    EXPECT_NO_THROW(reference::validate(in.problem)) << c.name;
    EXPECT_EQ(in.q.size(), in.problem.q.size() * spec::dtype_bytes(c.kernel.dtype)) << c.name;
    EXPECT_EQ(in.mask.empty(), c.kernel.mask == spec::MaskKind::none) << c.name;
    EXPECT_EQ(in.alibi_slopes.empty(), !c.kernel.alibi) << c.name;
    EXPECT_EQ(in.d_out.empty(), c.kernel.kind != Kind::backward) << c.name;
  }
}

TEST(SelftestMatrix, BackwardCasesAlsoGenerateTheirForwardKernel) {
  const std::vector<spec::KernelSpec> kernels = kernels_of(builtin_matrix(MatrixSize::quick));
  for (const SelftestCase& c : builtin_matrix(MatrixSize::quick)) {
    if (c.kernel.kind != Kind::backward) continue;
    const spec::KernelSpec forward = forward_kernel_of(c.kernel);
    EXPECT_EQ(forward.kind, Kind::forward);
    EXPECT_TRUE(forward.lse);
    EXPECT_TRUE(std::any_of(kernels.begin(), kernels.end(), [&](const spec::KernelSpec& k) {
      return k.name == forward.name;
    })) << forward.name;
  }
}

TEST(SelftestMatrix, InputsAreSeededAndMasksHideWholeRows) {
  const std::vector<SelftestCase> masked = filter_cases(full(), "bool_mask");
  ASSERT_EQ(masked.size(), 1u);
  const CaseInputs a = make_inputs(masked[0]), b = make_inputs(masked[0]);
  EXPECT_EQ(a.problem.q, b.problem.q);
  EXPECT_EQ(a.mask, b.mask);
  // Row 3 of every (batch, head) slice is hidden: its out must be 0 and lse -inf.
  const reference::AttentionProblem& p = a.problem;
  for (uint64_t j = 0; j < p.seq_k; ++j) EXPECT_FALSE(reference::key_visible(p, 0, 0, 3, j)) << j;
}

}  // namespace
}  // namespace mfagen::selftest
