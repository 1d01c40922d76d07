// Quantized KV caches (spec kv_dtype q8_0, q4_0, fp8_e4m3; DESIGN.md section
// 13): k and v stored as llama.cpp's blocks or as fp8 with per-tensor scales,
// dequantized inside the forward and decode kernels, dense and paged, alone
// and with causal, window, GQA, softcap, ALiBi, masks and sinks, at Sk 100
// and 32768, in packed sequences, and a paged q4_0 decode at 128k keys. The float64 reference
// dequantizes the same stored rows exactly as the format says; every
// detector is on.
#include <gtest/gtest.h>

#include <vector>

#include "forward_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;
using spec::KvDType;

constexpr KvDType kFormats[] = {KvDType::q8_0, KvDType::q4_0, KvDType::fp8_e4m3};

ForwardCase quantized(KvDType format, spec::Kind kind, DType dtype, uint32_t d, uint64_t sq, uint64_t sk) {
  ForwardCase c;
  c.kv_dtype = format;
  c.kind = kind;
  c.dtype = dtype;
  c.head_dim = d;
  c.heads_q = 8;
  c.heads_kv = 2;
  c.seq_q = sq;
  c.seq_k = sk;
  return c;
}

std::vector<ForwardCase> cases() {
  std::vector<ForwardCase> all;
  for (KvDType f : kFormats) {
    // Alone, at Sk 100, in each dtype.
    for (DType t : {DType::float16, DType::bfloat16, DType::float32})
      all.push_back(quantized(f, spec::Kind::forward, t, 64, 100, 100));
    // With causal and GQA, D 128, two batch entries, BSHD strides.
    ForwardCase c = quantized(f, spec::Kind::forward, DType::float16, 128, 40, 100);
    c.causal = Causal::bottom_right;
    c.batch = 2;
    c.bshd = true;
    all.push_back(c);
    // With a window and a softcap, MQA.
    c = quantized(f, spec::Kind::forward, DType::bfloat16, 64, 100, 100);
    c.window = {{30, 10}};
    c.softcap = 25;
    c.heads_kv = 1;
    all.push_back(c);
    // Decode at Sk 32768, GQA 4, with splits chosen from the shape and with sinks.
    c = quantized(f, spec::Kind::decode, DType::float16, 128, 2, 32768);
    c.heads_q = 4;
    c.heads_kv = 1;
    c.causal = Causal::bottom_right;
    c.sinks = true;
    all.push_back(c);
    // Paged decode: shuffled and shared pages of 16, one split and several.
    c = quantized(f, spec::Kind::decode, DType::bfloat16, 64, 1, 0);
    c.page_size = 16;
    c.cache_lengths = {300, 45, 0, 1000};
    c.share_pages = true;
    c.splits = 3;
    all.push_back(c);
    // Paged prefill against caches of pages of 256.
    c = quantized(f, spec::Kind::forward, DType::float16, 64, 33, 0);
    c.page_size = 256;
    c.cache_lengths = {100, 530};
    c.causal = Causal::bottom_right;
    c.share_pages = true;
    all.push_back(c);
  }
  // ALiBi, an additive mask and sinks with q4_0; a bool mask with fp8 at D 72
  // (fp8 takes any head dim).
  ForwardCase c = quantized(KvDType::q4_0, spec::Kind::forward, DType::float16, 64, 50, 100);
  c.alibi = true;
  c.mask = spec::MaskKind::additive;
  c.sinks = true;
  all.push_back(c);
  c = quantized(KvDType::fp8_e4m3, spec::Kind::forward, DType::float16, 72, 50, 100);
  c.mask = spec::MaskKind::boolean;
  all.push_back(c);
  // D 96 in float32: K/V passes of 64 columns, the second one half past the
  // head dim (whole blocks of zeros); fp8 at D 20, a span partly past it.
  for (KvDType f : kFormats) {
    const bool fp8 = f == KvDType::fp8_e4m3;
    c = quantized(f, fp8 ? spec::Kind::decode : spec::Kind::forward, DType::float32, fp8 ? 20 : 96, 9, 70);
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  // Packed sequences (layout varlen) of lengths 0, 1, 7 and 300, causal per sequence.
  for (KvDType f : kFormats) {
    c = quantized(f, spec::Kind::forward, DType::float16, 64, 0, 0);
    c.varlen_q = {0, 1, 7, 300};
    c.varlen_k = {5, 1, 7, 300};
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  return all;
}

class QuantizedKernel : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(QuantizedKernel, MatchesTheFloat64ReferenceOfTheDequantizedCache) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
  if (c.splits) {
    EXPECT_EQ(outcome.splits, c.splits);
  }
}

INSTANTIATE_TEST_SUITE_P(Quantized, QuantizedKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ForwardCase>& info) {
                           return std::to_string(info.index) + "_" + make_spec(info.param).name;
                         });

// 128k keys of a paged q4_0 cache, decoded (GQA 4, pages of 64 in shuffled order).
TEST(QuantizedKernelLongContext, PagedQ4Decode128k) {
  ForwardCase c = quantized(KvDType::q4_0, spec::Kind::decode, DType::float16, 128, 1, 0);
  c.heads_q = 4;
  c.heads_kv = 1;
  c.page_size = 64;
  c.cache_lengths = {131072};
  c.causal = Causal::bottom_right;
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
}

}  // namespace
}  // namespace mfagen::test
