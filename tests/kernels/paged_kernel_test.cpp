// Paged KV caches (spec kv_cache paged, DESIGN.md section 13): keys and
// values in pages (num_pages, page_size, Hkv, D) read through a block table
// with per-sequence cache lengths, in the forward (prefill against a cache)
// and split-K decode kernels. Pages in shuffled order, a page shared by two
// sequences, spare pages no one reads, page sizes 16 and 256; with causal,
// window, GQA, softcap, ALiBi and sinks; every detector on, each sequence
// against the float64 reference of its queries and its gathered keys. The
// forward also takes packed queries (layout varlen): a mixed batch of prefill
// chunks and decodes against the cache, with quantized caches; planned by
// Library::plan_batch, whose decodes pack a GQA group's rows.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "forward_harness.h"
#include "score_functions_harness.h"

namespace mfagen::test {
namespace {

using spec::Causal;
using spec::DType;

ForwardCase paged(spec::Kind kind, DType dtype, uint32_t page_size, std::vector<uint32_t> lengths, uint64_t sq) {
  ForwardCase c;
  c.kind = kind;
  c.dtype = dtype;
  c.head_dim = 64;
  c.heads_q = 8;
  c.heads_kv = 2;
  c.seq_q = sq;
  c.page_size = page_size;
  c.cache_lengths = std::move(lengths);
  c.share_pages = true;
  return c;
}

std::vector<ForwardCase> cases() {
  std::vector<ForwardCase> all;
  // Decode: few queries against caches of different lengths (one empty).
  for (DType t : {DType::float16, DType::bfloat16, DType::float32}) {
    ForwardCase c = paged(spec::Kind::decode, t, 16, {300, 45, 0, 1000}, 1);
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  {
    ForwardCase c = paged(spec::Kind::decode, DType::float16, 256, {700, 1300}, 4);
    c.causal = Causal::bottom_right;
    c.splits = 5;
    c.sinks = true;
    all.push_back(c);
    c.page_size = 16;
    c.splits = 1;
    c.window = {{100, 0}};
    c.softcap = 20;
    all.push_back(c);
  }
  // Prefill against a cache: a chunk of queries at the end of each sequence.
  for (uint32_t page_size : {16u, 256u}) {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, page_size, {100, 530, 37}, 33);
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  {
    ForwardCase c = paged(spec::Kind::forward, DType::bfloat16, 16, {64, 200}, 20);
    c.alibi = true;
    c.sinks = true;
    c.heads_kv = 1;  // MQA
    all.push_back(c);
  }
  // A serving step in one launch (layout varlen on the paged cache): packed
  // prefill chunks and single-query decodes, each at the end of its cache, and
  // a sequence with no new tokens.
  {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, 16, {100, 530, 37, 1000, 70}, 0);
    c.varlen_q = {33, 1, 0, 1, 70};
    c.causal = Causal::bottom_right;
    all.push_back(c);
  }
  {
    ForwardCase c = paged(spec::Kind::forward, DType::bfloat16, 16, {300, 45, 128}, 0);
    c.varlen_q = {1, 45, 20};
    c.causal = Causal::bottom_right;
    c.kv_dtype = spec::KvDType::q8_0;
    c.sinks = true;
    c.window = {{64, 0}};
    c.softcap = 30;
    all.push_back(c);
  }
  {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, 256, {600, 17}, 0);
    c.varlen_q = {40, 1};
    c.kv_dtype = spec::KvDType::fp8_e4m3;
    c.alibi = true;
    c.alibi_per_batch = true;
    all.push_back(c);
  }
  {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, 16, {90, 260}, 0);
    c.varlen_q = {1, 65};
    c.causal = Causal::bottom_right;
    c.kv_dtype = spec::KvDType::q4_0;
    c.target = spec::Target::apple10;  // TensorOps
    all.push_back(c);
  }
  // A planned batch (Library::plan_batch): one long prefill chunk, decodes at
  // long and short contexts, few threadgroups so that the long key ranges
  // split and merge; with sinks (folded once, in the merge) and a window.
  {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, 16, {900, 40, 1200, 3, 64}, 0);
    c.varlen_q = {70, 1, 1, 2, 64};
    c.causal = Causal::bottom_right;
    c.sinks = true;
    c.plan_threadgroups = 24;
    all.push_back(c);
    c.kv_dtype = spec::KvDType::q8_0;
    c.dtype = DType::bfloat16;
    c.window = {{300, 0}};
    c.sinks = false;
    c.plan_threadgroups = 40;
    all.push_back(c);
  }
  // score_mod and mask_mod on a paged cache (prefill against it): per-token
  // document ids of the keys (captured, sized by the longest cache) and a
  // relative position bias; each sequence's functions see its own b.
  {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, 16, {100, 300, 37}, 20);
    c.causal = Causal::bottom_right;
    c.mods = document_mask_case(RecipeShape{3, 8, 20, 300}, 17, 3);
    all.push_back(c);
    c.mods = relative_bias_case(RecipeShape{3, 8, 20, 300}, 23);
    c.causal = Causal::none;
    all.push_back(c);
  }
  // Decodes in a planned batch take a GQA group's (q head, query) pairs as
  // their rows, each kv head's keys read once by up to `group` threadgroups
  // (key slices, merged); prefill chunks keep one q head per threadgroup.
  // GQA 8 (16 q heads over 2; also a decode of 8 queries, whose 64 rows fill
  // the query block) and GQA 4, MQA; f16, q8_0, q4_0 and fp8 caches; sinks
  // with a window, softcap, ALiBi; few threadgroups, so that long key ranges
  // split too.
  {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, 16, {1000, 37, 700, 5, 300, 64}, 0);
    c.heads_q = 16;  // GQA 8
    c.varlen_q = {1, 1, 50, 3, 8, 64};
    c.causal = Causal::bottom_right;
    c.sinks = true;
    c.window = {{400, 0}};
    c.plan_threadgroups = 48;
    all.push_back(c);
    c.kv_dtype = spec::KvDType::q8_0;
    c.dtype = DType::bfloat16;
    c.sinks = false;
    c.window.reset();
    c.softcap = 25;
    c.plan_threadgroups = 2048;  // the decodes unsplit: their slices alone
    all.push_back(c);
  }
  {
    ForwardCase c = paged(spec::Kind::forward, DType::float16, 16, {900, 260, 17, 480}, 0);
    c.heads_q = 8;  // GQA 4
    c.varlen_q = {1, 16, 2, 90};
    c.causal = Causal::bottom_right;
    c.kv_dtype = spec::KvDType::q4_0;
    c.sinks = true;
    c.window = {{150, 0}};
    c.plan_threadgroups = 24;
    all.push_back(c);
    c.kv_dtype = spec::KvDType::fp8_e4m3;
    c.causal = Causal::none;
    c.window.reset();
    c.sinks = false;
    c.alibi = true;
    c.heads_kv = 1;  // MQA: a group of all 8 q heads
    c.varlen_q = {1, 8, 2, 90};
    all.push_back(c);
  }
  return all;
}

class PagedKernel : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(PagedKernel, EverySequenceMatchesItsFloat64Reference) {
  const ForwardCase& c = GetParam();
  const ForwardOutcome outcome = run_forward_case(c);
  EXPECT_TRUE(outcome.ok()) << c.describe() << "\n" << outcome.report();
  if (c.splits) {
    EXPECT_EQ(outcome.splits, c.splits);
  }
  if (c.plan_threadgroups) {
    EXPECT_GT(outcome.splits, 0u) << "the plan split no block: the test would not test the merge";
  }
}

// A planned batch merges its splits in split order: two runs give the same bits.
TEST(PlannedBatch, BitIdenticalRunToRun) {
  ForwardCase c = paged(spec::Kind::forward, DType::float16, 16, {700, 1, 1000}, 0);
  c.varlen_q = {3, 1, 1};
  c.causal = Causal::bottom_right;
  c.plan_threadgroups = 16;
  const ForwardOutcome first = run_forward_case(c), second = run_forward_case(c);
  ASSERT_TRUE(first.ok()) << first.report();
  EXPECT_GT(first.splits, 0u);
  EXPECT_EQ(std::memcmp(first.out_values.data(), second.out_values.data(), first.out_values.size() * 4), 0);
  EXPECT_EQ(std::memcmp(first.lse_values.data(), second.lse_values.data(), first.lse_values.size() * 4), 0);
}

INSTANTIATE_TEST_SUITE_P(Paged, PagedKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ForwardCase>& info) {
                           return std::to_string(info.index) + "_" + make_spec(info.param).name;
                         });

}  // namespace
}  // namespace mfagen::test
