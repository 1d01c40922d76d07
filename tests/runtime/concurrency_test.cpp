// select() and plan() from many threads at once: no locks on the hot path,
// and every thread gets what a single thread gets. Also built with
// ThreadSanitizer as runtime_tsan_test (tests/runtime/CMakeLists.txt), where
// any data race fails the test.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

const Library& library() {
  static const Library l = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": ["float16", "bfloat16"], "head_dim": [64, 128], "causal": ["none", "bottom_right"]},
    {"kind": "decode", "dtype": ["float16", "bfloat16"], "head_dim": [64, 128], "causal": "bottom_right"},
    {"dtype": "float16", "head_dim": 64, "gqa": false, "lse": false}]})"));
  return l;
}

AttentionQuery query(uint64_t i) {
  AttentionQuery q;
  q.dtype = i % 2 ? ElementType::bfloat16 : ElementType::float16;
  q.head_dim = q.head_dim_v = i % 3 ? 128 : 64;
  q.causal = i % 5 ? CausalMode::bottom_right : CausalMode::none;
  q.need_lse = i % 7 != 0;
  const uint64_t hkv = i % 4 ? 2 : 8;
  q.shape = {1 + i % 4, 8, hkv, 1 + i % 40 * (i % 3 ? 1 : 25), 1 + i % 777};
  return q;
}

struct Result {
  const KernelEntry* kernel = nullptr;
  std::vector<std::byte> params, launch_params;
  std::vector<uint64_t> sizes;
  bool operator==(const Result&) const = default;
};

Result work(uint64_t i) {
  const AttentionQuery q = query(i);
  Result r;
  r.kernel = library().find(q);
  if (!r.kernel) return r;
  ForwardCall c;
  c.shape = q.shape;
  c.strides = contiguous_bhsd(q.shape, q.head_dim, q.head_dim_v);
  const DispatchPlan p = Library::plan(library().select(q), c);
  r.params = p.params;
  for (const BufferRequirement& b : p.buffers) r.sizes.push_back(b.bytes);
  LaunchPlan fast;
  Library::launch_plan(*r.kernel, c, fast);
  r.launch_params.assign(fast.params().begin(), fast.params().end());
  for (const LaunchPlan::Buffer& b : fast.buffers()) r.sizes.push_back(b.bytes);
  return r;
}

TEST(Concurrency, EightThreadsSelectAndPlanAsOneThreadDoes) {
  constexpr uint64_t kCalls = 4000;
  std::vector<Result> expected;
  for (uint64_t i = 0; i < kCalls; ++i) expected.push_back(work(i));
  size_t found = 0;
  for (const Result& r : expected) found += r.kernel != nullptr;
  ASSERT_GT(found, kCalls / 2);
  std::atomic<uint64_t> mismatches{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < 8) std::this_thread::yield();  // start together
      for (int round = 0; round < 3; ++round)
        for (uint64_t i = (t + round) % 8; i < kCalls; i += 8)
          if (!(work(i) == expected[i])) mismatches.fetch_add(1);
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0u);
}

}  // namespace
}  // namespace mfagen
