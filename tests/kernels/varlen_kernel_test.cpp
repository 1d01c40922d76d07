// Variable-length batches (spec layout varlen, DESIGN.md section 13): q, k,
// v packed as (total, heads, D) with cu_seqlens, each sequence an attention of
// its own (bottom_right, window and ALiBi offsets per sequence). Forward and
// backward, with causal, window, GQA, softcap, ALiBi and sinks, every dtype,
// every detector on; each sequence judged against the float64 reference of
// that sequence alone. Lengths {0, 1, 7, 300} in one batch.
#include <gtest/gtest.h>

#include <vector>

#include "forward_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;

ForwardCase packed(spec::Kind kind, DType dtype, std::vector<uint32_t> q_lengths, std::vector<uint32_t> k_lengths) {
  ForwardCase c;
  c.kind = kind;
  c.dtype = dtype;
  c.head_dim = 32;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.varlen_q = std::move(q_lengths);
  c.varlen_k = std::move(k_lengths);
  return c;
}

const std::vector<uint32_t> kMixed = {0, 1, 7, 300};
const std::vector<uint32_t> kMixedKeys = {5, 0, 20, 301};  // a query row with no key at all (sequence 1)

std::vector<ForwardCase> forward_cases() {
  std::vector<ForwardCase> all;
  for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
    ForwardCase c = packed(spec::Kind::forward, t, kMixed, kMixed);
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  {
    ForwardCase c = packed(spec::Kind::forward, DType::float16, kMixed, kMixedKeys);  // Sq != Sk per sequence
    all.push_back(c);
    c.causal = Causal::bottom_right;
    c.window = {{16, 0}};
    all.push_back(c);
    c.causal = Causal::top_left;
    c.window.reset();
    c.softcap = 5;
    c.sinks = true;
    all.push_back(c);
    c = packed(spec::Kind::forward, DType::bfloat16, kMixed, kMixedKeys);
    c.alibi = true;
    c.alibi_per_batch = true;  // slopes per sequence
    c.heads_kv = 1;            // MQA
    all.push_back(c);
  }
  return all;
}

std::vector<ForwardCase> backward_cases() {
  std::vector<ForwardCase> all;
  for (DType t : {DType::float16, DType::float32}) {
    ForwardCase c = packed(spec::Kind::backward, t, kMixed, kMixed);
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  {
    ForwardCase c = packed(spec::Kind::backward, DType::bfloat16, {3, 0, 40}, {9, 4, 33});
    c.window = {{6, 2}};
    c.sinks = true;
    c.softcap = 4;
    all.push_back(c);
  }
  return all;
}

std::string case_name(const ::testing::TestParamInfo<ForwardCase>& info) {
  return std::to_string(info.index) + "_" + make_spec(info.param).name;
}

class VarlenForward : public ::testing::TestWithParam<ForwardCase> {};
TEST_P(VarlenForward, EverySequenceMatchesItsFloat64Reference) {
  const ForwardOutcome outcome = run_forward_case(GetParam());
  EXPECT_TRUE(outcome.ok()) << GetParam().describe() << "\n" << outcome.report();
}
INSTANTIATE_TEST_SUITE_P(Varlen, VarlenForward, ::testing::ValuesIn(forward_cases()), case_name);

class VarlenBackward : public ::testing::TestWithParam<ForwardCase> {};
TEST_P(VarlenBackward, EverySequenceGradientMatchesItsFloat64Reference) {
  const ForwardOutcome outcome = run_forward_case(GetParam());
  EXPECT_TRUE(outcome.ok()) << GetParam().describe() << "\n" << outcome.report();
  EXPECT_EQ(outcome.gradients.size(), GetParam().sinks ? 4u : 3u);
}
INSTANTIATE_TEST_SUITE_P(Varlen, VarlenBackward, ::testing::ValuesIn(backward_cases()), case_name);

// cu_seqlens in device memory that decrease, go negative and run past the
// packed tensors: the kernel clamps what it reads, so nothing is accessed out
// of bounds (the detectors watch every access).
TEST(VarlenGuard, CorruptCuSeqlensNeverReachOutOfBounds) {
  for (spec::Kind kind : {spec::Kind::forward, spec::Kind::backward}) {
    ForwardCase c = packed(kind, DType::float16, {4, 9, 2}, {6, 3, 11});
    c.causal = Causal::bottom_right;
    c.corrupt_cu_seqlens = true;
    const ForwardOutcome outcome = run_forward_case(c);
    EXPECT_TRUE(outcome.dispatch.clean()) << outcome.report();
  }
}

}  // namespace
}  // namespace mfagen::test
