// select() and plan() from many threads at once: no locks on the hot path,
// and every thread gets what a single thread gets; with the call trace on,
// every call is counted once while another thread reads the statistics.
// Also built with ThreadSanitizer as runtime_tsan_test
// (tests/runtime/CMakeLists.txt), where any data race fails the test.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "generated_manifest.h"
#include "mfagen/call_trace.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

const Library& shared_library() {
  static const Library l = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": ["float16", "bfloat16"], "head_dim": [64, 128], "causal": ["none", "bottom_right"]},
    {"kind": "decode", "dtype": ["float16", "bfloat16"], "head_dim": [64, 128], "causal": "bottom_right"},
    {"dtype": "float16", "head_dim": 64, "gqa": false, "lse": false}]})"));
  return l;
}

AttentionQuery shared_query(uint64_t i) {
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
  const AttentionQuery q = shared_query(i);
  Result r;
  r.kernel = shared_library().find(q);
  if (!r.kernel) return r;
  ForwardCall c;
  c.shape = q.shape;
  c.strides = contiguous_bhsd(q.shape, q.head_dim, q.head_dim_v);
  const DispatchPlan p = Library::plan(shared_library().select(q), c);
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

// What a backend does per call, traced: find (a miss is counted by find),
// then count the run. Queries repeat every 97 calls, so no thread's table
// fills; one in ten asks for head dims no kernel has.
void traced_call(uint64_t i) {
  AttentionQuery q = shared_query(i % 97);
  if (i % 10 == 3) q.head_dim = q.head_dim_v = 96;
  if (const KernelEntry* kernel = shared_library().find(q)) trace_call(*kernel, q.shape, "test");
}

bool same_counts(const CallStatistics& a, const CallStatistics& b) {
  if (a.counts.size() != b.counts.size() || a.untracked != b.untracked) return false;
  for (size_t i = 0; i < a.counts.size(); ++i)
    if (!a.counts[i].same_key(b.counts[i]) || a.counts[i].calls != b.counts[i].calls) return false;
  return true;
}

TEST(Concurrency, EightTracingThreadsCountEveryCallOnceWhileStatisticsAreRead) {
  set_call_trace_enabled(true);
  reset_call_statistics();
  constexpr uint64_t kCalls = 3000, kRounds = 10;
  std::thread([] {  // the reference: one thread (its table merged when it exits)
    for (uint64_t round = 0; round < kRounds; ++round)
      for (uint64_t i = 0; i < kCalls; ++i) traced_call(i);
  }).join();
  const CallStatistics expected = call_statistics();
  ASSERT_GT(expected.misses(), 0u);
  ASSERT_GT(expected.kernel_calls(), 0u);
  ASSERT_EQ(expected.kernel_calls() + expected.misses(), kCalls * kRounds);
  reset_call_statistics();

  std::atomic<bool> reading{false}, done{false};
  std::thread reader([&] {  // reads live tables while their threads count and exit
    while (!done.load()) {
      const CallStatistics s = call_statistics();
      if (s.kernel_calls() + s.misses() > kCalls * kRounds) ADD_FAILURE() << "more calls than were made";
      reading.store(true);
    }
  });
  while (!reading.load()) std::this_thread::yield();  // counting starts while the reader runs
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t] {
      for (uint64_t round = 0; round < kRounds; ++round)
        for (uint64_t i = t; i < kCalls; i += 8) traced_call(i);
    });
  for (std::thread& t : threads) t.join();
  done.store(true);
  reader.join();
  set_call_trace_enabled(false);
  EXPECT_TRUE(same_counts(call_statistics(), expected));
  reset_call_statistics();
}

}  // namespace
}  // namespace mfagen
