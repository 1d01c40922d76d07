// The TensorOps forward kernels (target apple10: products on Metal 4's
// mpp::tensor_ops::matmul2d, DESIGN.md section 15), run on the cpu backend
// with every detector on against the float64 reference: every dtype and
// causal mode, head dims 1..576 (Dv != D), GQA/MQA, ragged and unequal
// lengths, BSHD strides, explicit tiles and every forward feature (masks,
// window, softcap, ALiBi, sinks, dropout, packed sequences, paged and
// quantized caches, score_mod / mask_mod). Every case runs with a permuted
// cooperative-tensor layout (the layout is implementation-defined: a kernel
// that relied on the stand-in's default one would fail there); the common
// cases run with the default layout too. Running every case under both
// layouts doubled the suite's longest kernel test and checked nothing more:
// a kernel that asks its cooperative tensors for slot positions is right
// under any layout.
#include <gtest/gtest.h>

#include <vector>

#include "forward_harness.h"
#include "score_functions_harness.h"
#include "serving_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;
using spec::MaskKind;

constexpr DType kF16 = DType::float16, kBF16 = DType::bfloat16, kF32 = DType::float32;
constexpr Causal kNone = Causal::none, kTopLeft = Causal::top_left, kBottomRight = Causal::bottom_right;
constexpr uint32_t kPermutedLayout = 0x5eed;

ForwardCase with(DType dtype, uint32_t d, uint32_t dv, Causal causal, uint64_t sq, uint64_t sk) {
  return forward_case(dtype, d, dv, causal, sq, sk, spec::Target::apple10);
}

std::vector<ForwardCase> shapes() {
  std::vector<ForwardCase> cases = common_forward_cases(spec::Target::apple10);
  int i = 0;
  for (uint32_t d : {8u, 96u, 128u, 256u, 512u}) {
    cases.push_back(with(i % 3 == 0 ? kF16 : i % 3 == 1 ? kBF16 : kF32, d, 0, Causal(i % 3), 40, 45));
    ++i;
  }
  cases.push_back(with(kF16, 576, 512, kBottomRight, 20, 37));
  cases.push_back(with(kF32, 20, 44, kBottomRight, 13, 29));
  cases.push_back(with(kF16, 1, 1, kNone, 5, 9));
  cases.push_back(with(kBF16, 3, 5, kTopLeft, 11, 11));
  for (auto [hq, hkv] : {std::pair<uint64_t, uint64_t>{8, 2}, {8, 1}}) {
    ForwardCase f = with(kF16, 64, 0, kBottomRight, 20, 50);
    f.heads_q = hq;
    f.heads_kv = hkv;
    cases.push_back(f);
  }
  cases.push_back(with(kF16, 64, 0, kNone, 1, 1));
  cases.push_back(with(kBF16, 64, 0, kBottomRight, 1, 300));
  cases.push_back(with(kF32, 32, 0, kBottomRight, 300, 17));  // most rows see no key
  cases.push_back(with(kF16, 16, 0, kTopLeft, 300, 300));
  for (spec::Tiles t : {spec::Tiles{8, 8, 1}, spec::Tiles{128, 32, 4}, spec::Tiles{32, 64, 1}}) {
    ForwardCase f = with(kF16, 80, 0, kBottomRight, 70, 90);
    f.tiles = t;
    cases.push_back(f);
  }
  return cases;
}

std::vector<ForwardCase> features() {
  std::vector<ForwardCase> cases;
  for (DType t : {kF16, kBF16, kF32}) {
    ForwardCase c = with(t, 64, 0, kNone, 37, 53);
    c.batch = 2;
    c.heads_q = 4;
    c.heads_kv = 2;
    ForwardCase f = c;
    f.mask = MaskKind::boolean;
    cases.push_back(f);
    f.mask = MaskKind::additive;
    f.mask_extents = {0, 1, 0, 0};
    cases.push_back(f);
    f = c;
    f.window = {{8, 3}};
    f.causal = kBottomRight;
    cases.push_back(f);
    f = c;
    f.softcap = 5.0;
    f.alibi = true;
    cases.push_back(f);
    f = c;
    f.sinks = true;
    f.causal = kTopLeft;
    cases.push_back(f);
    f = c;
    f.dropout = reference::DropoutOptions{0.25, 0x1234567890abcdefull, 7};
    cases.push_back(f);
  }
  {
    ForwardCase f = with(kF16, 64, 0, kBottomRight, 0, 0);
    f.varlen_q = {5, 40, 1};
    f.varlen_k = {9, 70, 30};
    f.heads_q = 4;
    f.heads_kv = 2;
    cases.push_back(f);
  }
  {
    ForwardCase f = with(kBF16, 64, 0, kBottomRight, 20, 0);
    f.page_size = 16;
    f.cache_lengths = {40, 75};
    f.heads_q = 4;
    f.heads_kv = 2;
    f.share_pages = true;
    cases.push_back(f);
  }
  for (spec::KvDType q : {spec::KvDType::q8_0, spec::KvDType::q4_0, spec::KvDType::fp8_e4m3}) {
    ForwardCase f = with(kF16, 64, 0, kNone, 24, 70);
    f.kv_dtype = q;
    cases.push_back(f);
  }
  {  // a serving cache: paged, q8_0, with a score_mod and then a mask_mod
    ForwardCase f = with(kF16, 64, 0, kBottomRight, 20, 0);
    f.page_size = 16;
    f.cache_lengths = {60, 90};
    f.heads_q = 4;
    f.heads_kv = 2;
    f.kv_dtype = spec::KvDType::q8_0;
    f.mods = relative_bias_case(RecipeShape{2, 4, 20, 90}, 61);
    cases.push_back(f);
    f.mods = document_mask_case(RecipeShape{2, 4, 20, 90}, 67, 3);
    cases.push_back(f);
  }
  return cases;
}

std::vector<ForwardCase> with_permuted_layout(std::vector<ForwardCase> cases) {
  for (ForwardCase& c : cases) c.tensor_layout_seed = kPermutedLayout;
  return cases;
}

// The default layout on the common cases, then every case permuted.
std::vector<ForwardCase> shapes_under_both_layouts() {
  std::vector<ForwardCase> cases = common_forward_cases(spec::Target::apple10);
  for (const ForwardCase& c : with_permuted_layout(shapes())) cases.push_back(c);
  return cases;
}

class TensorOpsForward : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(TensorOpsForward, MatchesFloat64ReferenceWithNoFindings) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = c.varlen_q.empty() && c.page_size == 0 ? run_forward_case(c)
                                 : c.page_size ? run_paged_case(c)
                                               : run_varlen_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
}

INSTANTIATE_TEST_SUITE_P(Shapes, TensorOpsForward, ::testing::ValuesIn(shapes_under_both_layouts()),
                         [](const auto& info) { return std::to_string(info.index); });
INSTANTIATE_TEST_SUITE_P(Features, TensorOpsForward, ::testing::ValuesIn(with_permuted_layout(features())),
                         [](const auto& info) { return std::to_string(info.index); });

// The generated source really is a TensorOps kernel (and apple9 is not).
TEST(TensorOpsForward, Apple10ForwardKernelsUseMatmul2d) {
  ForwardCase c = with(kF16, 64, 0, kNone, 8, 8);
  const CaseKernel k = compile_forward_kernel(c);
  EXPECT_TRUE(k.plan.tensor_ops);
  EXPECT_NE(k.source.find("mpp::tensor_ops"), std::string::npos);
  EXPECT_NE(k.source.find("matmul2d<qk_desc, execution_simdgroup>"), std::string::npos);
  EXPECT_EQ(k.source.find("simdgroup_multiply_accumulate"), std::string::npos);
  c.target = spec::Target::apple9;
  const CaseKernel k9 = compile_forward_kernel(c);
  EXPECT_FALSE(k9.plan.tensor_ops);
  EXPECT_EQ(k9.source.find("mpp::tensor_ops"), std::string::npos);
}

}  // namespace
}  // namespace mfagen::test
