// `mfagen profile` of a serving step (issue 37): per-sequence lengths
// (--seqlens-q, --seqlens-k) and their syntax; a batch of one prefill and
// decodes on a paged cache profiled in one launch runs the work items of
// Library::plan_batch and its _merge launch, and moves exactly each
// sequence's q, K, V, out and lse bytes (computed here, sequence by
// sequence, for float16 and q8_0 caches); the same batch as separate
// prefill and decode launches does the same work in four launches.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/npy.h"
#include "plan/kernel_plan.h"
#include "profile/sequence_lengths.h"
#include "profile/spec_profile.h"
#include "session/call_error.h"

namespace mfagen::profile {
namespace {

// ---- the lengths' syntax ----

TEST(SequenceLengths, ParsesRepeatsRangesAndLists) {
  const std::vector<uint64_t> mixed = parse_lengths("2048,1x63", "--seqlens-q");
  ASSERT_EQ(mixed.size(), 64u);
  EXPECT_EQ(mixed.front(), 2048u);
  EXPECT_TRUE(std::all_of(mixed.begin() + 1, mixed.end(), [](uint64_t l) { return l == 1; }));

  const std::vector<uint64_t> spread = parse_lengths("2048,4096..32768x63", "--seqlens-k");
  ASSERT_EQ(spread.size(), 64u);
  EXPECT_EQ(spread[1], 4096u);
  EXPECT_EQ(spread[2], 4558u);  // 4096 + round(28672 / 62) = 4096 + round(462.45)
  EXPECT_EQ(spread[32], 18432u);  // the middle of 4096..32768
  EXPECT_EQ(spread.back(), 32768u);
  EXPECT_EQ(parse_lengths("5..5x3", "--seqlens-k"), (std::vector<uint64_t>{5, 5, 5}));
  EXPECT_EQ(parse_lengths("7..9x1", "--seqlens-k"), (std::vector<uint64_t>{7}));
  EXPECT_EQ(parse_lengths("0,3,1x2", "--seqlens-q"), (std::vector<uint64_t>{0, 3, 1, 1}));
  EXPECT_EQ(lengths_text(mixed), "2048, 1 x63");
  EXPECT_EQ(lengths_text(spread), "64 sequences, 2048..32768, total 1163264");
}

TEST(SequenceLengths, ReadsNpyFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mfagen_seqlens_test";
  std::filesystem::create_directories(dir);
  const std::vector<int32_t> lengths = {2048, 1, 1};
  io::write_npy_atomic(dir / "q.npy", io::NpyArray::from<int32_t>(lengths));
  EXPECT_EQ(parse_lengths((dir / "q.npy").string(), "--seqlens-q"), (std::vector<uint64_t>{2048, 1, 1}));
  const std::vector<int64_t> wide = {5, 6};
  io::write_npy_atomic(dir / "k.npy", io::NpyArray::from<int64_t>(wide));
  EXPECT_EQ(parse_lengths((dir / "k.npy").string(), "--seqlens-k"), (std::vector<uint64_t>{5, 6}));
  const std::vector<float> floats = {1.0f};
  io::write_npy_atomic(dir / "f.npy", io::NpyArray::from<float>(floats));
  try {
    parse_lengths((dir / "f.npy").string(), "--seqlens-k");
    ADD_FAILURE() << "float lengths accepted";
  } catch (const session::CallError& e) {
    EXPECT_NE(std::string(e.what()).find("--seqlens-k"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
  const std::vector<int32_t> negative = {3, -1};
  io::write_npy_atomic(dir / "n.npy", io::NpyArray::from<int32_t>(negative));
  EXPECT_THROW(parse_lengths((dir / "n.npy").string(), "--seqlens-q"), session::CallError);
  std::filesystem::remove_all(dir);
}

TEST(SequenceLengths, BadListsNameTheOptionAndWhatWasExpected) {
  const struct {
    const char* text;
    const char* says;
  } bad[] = {{"", "at least one"},         {"1,,2", "empty item"},      {"x3", "a length"},
             {"1x0", "at least 1"},        {"4..8", "needs a count"},   {"abc", "a length"},
             {"-1", "a length"},           {"1x2x3", "a count"},        {"99999999999", "above"},
             {"1.5", "a length"},          {"2..x3", "a length"},       {"1x99999999", "above"}};
  for (const auto& b : bad) {
    try {
      parse_lengths(b.text, "--seqlens-q");
      ADD_FAILURE() << b.text << " accepted";
    } catch (const session::CallError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--seqlens-q", 0), 0u) << what;
      EXPECT_NE(what.find(b.says), std::string::npos) << b.text << ": " << what;
    }
  }
}

TEST(SequenceLengths, OneListTakesTheOtherFromTheShape) {
  const SequenceLengths l = complete_lengths({}, {100, 200}, 1, 4096);
  EXPECT_EQ(l.q, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(l.k, (std::vector<uint64_t>{100, 200}));
  EXPECT_THROW(complete_lengths({1, 1, 1}, {100, 200}, 1, 1), session::CallError);
  EXPECT_THROW(complete_lengths({0, 0}, {100, 200}, 1, 1), session::CallError);
  EXPECT_THROW(complete_lengths({1, 1}, {0, 0}, 1, 1), session::CallError);
}

// ---- a serving step, profiled ----

constexpr uint64_t kHeadsQ = 4, kHeadsKv = 1, kD = 64;
// One prefill of 70 queries on 80 keys (its own), three decodes. Key counts
// are whole pages of 16, so each sequence's cache is exactly its keys.
const std::vector<uint64_t> kQueries = {70, 1, 1, 1};
const std::vector<uint64_t> kKeys = {80, 160, 96, 400};

struct ServingSpecs {
  // One directory per test: ctest runs this file's tests as concurrent
  // processes, and one test's destructor removed the spec file another was
  // about to read (a CI-like run failed so).
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("mfagen_serving_profile_" +
                               std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::path file = dir / "serving.json";
  ServingSpecs() {
    std::filesystem::create_directories(dir);
    std::ofstream(file) << R"({"kernels": [
      {"dtype": "float16", "head_dim": 64, "causal": "bottom_right", "gqa": true, "layout": "varlen",
       "kv_cache": "paged", "kv_dtype": ["float16", "q8_0"]},
      {"kind": "decode", "dtype": "float16", "head_dim": 64, "causal": "bottom_right", "gqa": true,
       "kv_cache": "paged", "kv_dtype": ["float16", "q8_0"]}]})";
  }
  ~ServingSpecs() { std::filesystem::remove_all(dir); }
};

SpecCall serving_call(const ServingSpecs& specs, spec::KvDType kv) {
  SpecCall call;
  call.spec_file = specs.file.string();
  call.shape.heads_q = kHeadsQ;
  call.shape.heads_kv = kHeadsKv;
  call.kv_dtype = kv;
  call.lengths = {kQueries, kKeys};
  call.sample_threadgroups = 0;  // every threadgroup: exact bytes
  return call;
}

// Bytes of one key's row of k (or v) for one kv head, as the cache stores it.
uint64_t cache_row_bytes(spec::KvDType kv) { return kv == spec::KvDType::q8_0 ? kD / 32 * 34 : kD * 2; }

// What the batch must move, sequence by sequence: q read once, K and V of
// each sequence's cache read, out and lse written once.
struct SequenceBytes {
  uint64_t q = 0, k = 0, v = 0, out = 0, lse = 0;
  uint64_t sum() const { return q + k + v + out + lse; }
};
SequenceBytes expected_bytes(spec::KvDType kv) {
  SequenceBytes e;
  for (size_t b = 0; b < kQueries.size(); ++b) {
    e.q += kQueries[b] * kHeadsQ * kD * 2;
    e.out += kQueries[b] * kHeadsQ * kD * 2;
    e.lse += kQueries[b] * kHeadsQ * 4;
    e.k += kKeys[b] * kHeadsKv * cache_row_bytes(kv);
    e.v += kKeys[b] * kHeadsKv * cache_row_bytes(kv);
  }
  return e;
}

// Compulsory bytes of one buffer over every launch (each launch's touched bytes, once).
uint64_t buffer_compulsory(const KernelWork& work, uint32_t index) {
  uint64_t bytes = 0;
  for (const LaunchWork& l : work.launches)
    for (const LaunchWork::Buffer& b : l.buffers)
      if (b.index == index) bytes += std::min(b.size, b.bytes_read) + std::min(b.size, b.bytes_written);
  return bytes;
}

std::string describe_serving(const KernelWork& work) {
  std::string text = work.name + " (" + work.shape + ")";
  for (const LaunchWork& l : work.launches) {
    text += "\n" + l.kernel + ": " + std::to_string(l.threadgroups) + " threadgroups";
    for (const LaunchWork::Buffer& b : l.buffers)
      text += "\n  buffer " + std::to_string(b.index) + " size " + std::to_string(b.size) + " read " +
              std::to_string(b.bytes_read) + " written " + std::to_string(b.bytes_written);
  }
  return text;
}

void expect_moves_each_sequence_once(const KernelWork& work, spec::KvDType kv) {
  const SequenceBytes e = expected_bytes(kv);
  EXPECT_EQ(buffer_compulsory(work, plan::kQIndex), e.q) << describe_serving(work);
  EXPECT_EQ(buffer_compulsory(work, plan::kKIndex), e.k) << describe_serving(work);
  EXPECT_EQ(buffer_compulsory(work, plan::kVIndex), e.v) << describe_serving(work);
  EXPECT_EQ(buffer_compulsory(work, plan::kOutIndex), e.out) << describe_serving(work);
  EXPECT_EQ(buffer_compulsory(work, plan::kLseIndex), e.lse) << describe_serving(work);
  EXPECT_EQ(work.io_model_bytes, e.sum()) << describe_serving(work);
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

TEST(ServingProfile, OneLaunchRunsThePlannedWorkItemsAndMovesEachSequenceOnce) {
  const ServingSpecs specs;
  for (spec::KvDType kv : {spec::KvDType::float16, spec::KvDType::q8_0}) {
    const KernelWork work = profile_spec_call(serving_call(specs, kv));
    ASSERT_EQ(work.launches.size(), 2u) << "the work items, then _merge: " << describe_serving(work);
    const LaunchWork& main = work.launches[0];
    const LaunchWork& merge = work.launches[1];
    EXPECT_EQ(merge.kernel, main.kernel + "_merge");

    // The work items, counted here: a (sequence, query block) each, its keys
    // those its rows see (bottom-right causal), split into ceil(n / 4) parts
    // when a threadgroup would see more than 4 key blocks (plan_batch's
    // budget per item is max(4, key blocks / (2048 / Hq)): 4 for a batch this
    // small). A decode packs its GQA group's 4 q heads into its rows: its Hq
    // threadgroups are min(4, n) slices of the kv head's n key blocks, merged.
    spec::KernelSpec s;
    s.dtype = spec::DType::float16;
    s.head_dim = s.head_dim_v = kD;
    s.causal = spec::Causal::bottom_right;
    s.gqa = true;
    s.layout = spec::Layout::varlen;
    s.kv_cache = spec::KvCache::paged;
    if (kv == spec::KvDType::q8_0) s.kv_dtype = kv;  // float16 k and v: the spec's dtype, no field
    const plan::KernelPlan p = plan::plan_kernel(s);
    const uint64_t group = kHeadsQ / kHeadsKv;
    uint64_t items = 0, split_blocks = 0, key_blocks = 0;
    for (size_t b = 0; b < kQueries.size(); ++b) {
      const bool decode = kQueries[b] * group <= p.block_q;
      for (uint64_t first = 0; first < kQueries[b]; first += p.block_q) {
        const uint64_t last = std::min(first + p.block_q, kQueries[b]) - 1;
        const uint64_t keys = std::min(kKeys[b], last + kKeys[b] - kQueries[b] + 1);
        const uint64_t slices = decode ? std::clamp<uint64_t>(ceil_div(keys, p.block_k), 1, group) : 1;
        const uint64_t blocks = ceil_div(ceil_div(keys, p.block_k), slices);  // of one threadgroup
        key_blocks += blocks;
        items += blocks <= 4 ? 1 : ceil_div(blocks, 4);
        split_blocks += blocks > 4 || slices > 1;
      }
    }
    ASSERT_LE(ceil_div(key_blocks, 2048 / kHeadsQ), 4u);
    ASSERT_GT(split_blocks, 0u) << "the batch should split a block";
    EXPECT_EQ(main.grid[0], items) << describe_serving(work);
    EXPECT_EQ(main.threadgroups, items * kHeadsQ);
    EXPECT_EQ(main.threadgroups_run, main.threadgroups);
    EXPECT_EQ(merge.grid[0], split_blocks) << describe_serving(work);
    expect_moves_each_sequence_once(work, kv);
    EXPECT_NE(work.shape.find("Sq per sequence 70, 1 x3"), std::string::npos) << work.shape;
  }
}

// Every q head runs the same work items, so a planned launch is sampled
// across the heads (strata ordered y fastest): 4 threadgroups of the 4 heads
// x items still land within 10% of the full run's MMAs (linear strata would
// be one head each, all at the middle item).
TEST(ServingProfile, SampledPlannedLaunchSpansItsWorkItems) {
  const ServingSpecs specs;
  SpecCall call = serving_call(specs, spec::KvDType::float16);
  const KernelWork full = profile_spec_call(call);
  call.sample_threadgroups = 4;
  const KernelWork sampled = profile_spec_call(call);
  const LaunchWork& f = full.launches.at(0);
  const LaunchWork& s = sampled.launches.at(0);
  ASSERT_EQ(s.threadgroups_run, 4u);
  EXPECT_NE(s.sampling.find("y fastest"), std::string::npos) << s.sampling;
  const double mmas = f.op(Op::mma_f16_f32) + f.op(Op::mma_f16_f16);
  EXPECT_NEAR(s.op(Op::mma_f16_f32) + s.op(Op::mma_f16_f16), mmas, 0.1 * mmas);
}

TEST(ServingProfile, SeparateLaunchesDoTheSameWorkInAPrefillAndADecodeCall) {
  const ServingSpecs specs;
  // q8_0 only, to keep the test short (the one-launch test covers both caches).
  for (spec::KvDType kv : {spec::KvDType::q8_0}) {
    const SpecCall call = serving_call(specs, kv);
    const KernelWork one = profile_spec_call(call);
    const KernelWork separate = profile_separate_launches(call);
    ASSERT_EQ(separate.launches.size(), 4u) << "prefill and _merge, decode and combine: " << describe_serving(separate);
    EXPECT_EQ(separate.launches[0].kernel, one.launches[0].kernel) << "the prefill runs the one-launch kernel";
    EXPECT_EQ(separate.launches[2].grid[2], 3u) << "the three decodes, dense queries: " << describe_serving(separate);
    EXPECT_DOUBLE_EQ(separate.useful_flops, one.useful_flops);
    expect_moves_each_sequence_once(separate, kv);
  }
}

TEST(ServingProfile, BadBatchesAreRefusedNamingTheOption) {
  const ServingSpecs specs;
  SpecCall call = serving_call(specs, spec::KvDType::float16);
  call.layout = spec::Layout::dense;  // only the decode kernel: dense queries
  try {
    profile_spec_call(call);
    ADD_FAILURE() << "dense queries of different counts accepted";
  } catch (const session::CallError& e) {
    EXPECT_NE(std::string(e.what()).find("layout varlen"), std::string::npos) << e.what();
  }
  call = serving_call(specs, spec::KvDType::float16);
  call.lengths = {{1, 1}, {64, 32}};
  try {
    profile_separate_launches(call);
    ADD_FAILURE() << "a batch without prefills accepted";
  } catch (const session::CallError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--separate", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace mfagen::profile
