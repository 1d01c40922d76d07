// Per-call cost of the runtime's hot path: select() + plan() for a shape, on
// a library of 48 kernels. Run: build/tests/runtime/runtime_bench
#include <benchmark/benchmark.h>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace {

using namespace mfagen;

const Library& library() {
  static const Library l = Library::load_from_memory(test::manifest_for(
      R"({"dtype": ["float16", "bfloat16", "float32"], "head_dim": [64, 80, 96, 128], "causal": ["none", "top_left", "bottom_right"],
          "lse": [true, false]})"));
  return l;
}

AttentionQuery query() {
  AttentionQuery q;
  q.dtype = ElementType::float32;
  q.head_dim = q.head_dim_v = 128;
  q.causal = CausalMode::bottom_right;
  q.shape = {1, 32, 8, 1, 4096};
  return q;
}

void BM_Select(benchmark::State& state) {
  const Library& l = library();
  const AttentionQuery q = query();
  for (auto _ : state) benchmark::DoNotOptimize(l.find(q));
}
BENCHMARK(BM_Select);

void BM_SelectAndPlan(benchmark::State& state) {
  const Library& l = library();
  const AttentionQuery q = query();
  ForwardCall c;
  c.shape = q.shape;
  c.strides = contiguous_bhsd(q.shape, 128, 128);
  for (auto _ : state) {
    const KernelEntry& k = l.select(q);
    benchmark::DoNotOptimize(Library::plan(k, c));
  }
}
BENCHMARK(BM_SelectAndPlan);

}  // namespace

BENCHMARK_MAIN();
