// select() and plan() from many threads at once: no locks on the hot path,
// and every thread gets what a single thread gets.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

TEST(Concurrency, ManyThreadsSelectAndPlan) {
  const Library library = Library::load_from_memory(test::manifest_for(
      R"({"dtype": ["float16", "bfloat16"], "head_dim": [64, 128], "causal": ["none", "bottom_right"]})"));
  auto call = [](uint64_t i) {
    AttentionQuery q;
    q.dtype = i % 2 ? ElementType::bfloat16 : ElementType::float16;
    q.head_dim = q.head_dim_v = i % 3 ? 128 : 64;
    q.causal = i % 5 ? CausalMode::bottom_right : CausalMode::none;
    q.shape = {1 + i % 4, 8, 2, 1 + i % 1000, 1 + i % 777};
    return q;
  };
  auto work = [&](uint64_t i) {
    const AttentionQuery q = call(i);
    const KernelEntry& k = library.select(q);
    ForwardCall c;
    c.shape = q.shape;
    c.strides = contiguous_bhsd(q.shape, q.head_dim, q.head_dim_v);
    const DispatchPlan p = Library::plan(k, c);
    return std::make_pair(&k, p.params);
  };
  constexpr uint64_t kCalls = 4000;
  std::vector<std::pair<const KernelEntry*, std::vector<std::byte>>> expected;
  for (uint64_t i = 0; i < kCalls; ++i) expected.push_back(work(i));
  std::atomic<uint64_t> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = t; i < kCalls; i += 8)
        if (work(i) != expected[i]) ++mismatches;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0u);
}

}  // namespace
}  // namespace mfagen
