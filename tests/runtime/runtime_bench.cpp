// Per-call cost of the runtime's hot path on a library of 1008 kernels:
// select() + launch_plan() (fixed storage) and, for comparison, select() +
// plan() (a heap-allocated DispatchPlan). Heap allocations per call are
// counted by replacing the global operator new. Run:
//   build/tests/runtime/runtime_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// GCC pairs the replaced new with free() and warns; both sides are ours.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace {

using namespace mfagen;

// kind x dtype x head_dim x causal x gqa x lse x window = 2 x 3 x 7 x 3 x 2 x 2 x 2 = 1008 kernels.
const Library& library() {
  static const Library l = [] {
    const auto t0 = std::chrono::steady_clock::now();
    Library lib = Library::load_from_memory(test::manifest_for(
        R"({"kind": ["forward", "decode"], "dtype": ["float16", "bfloat16", "float32"],
            "head_dim": [64, 72, 80, 96, 112, 128, 256], "causal": ["none", "top_left", "bottom_right"],
            "gqa": [true, false], "lse": [true, false], "window": [false, true]})"));
    std::fprintf(stderr, "library: %zu kernels, generated and loaded in %.1f s\n", lib.kernels().size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return lib;
  }();
  return l;
}

struct Call {
  AttentionQuery query;
  ForwardCall call;
};

// 64 different calls (decode and prefill, GQA and MHA, every dtype and
// causal mode), cycled so branch prediction does not see one call only.
std::vector<Call> calls() {
  std::vector<Call> out;
  const uint32_t dims[] = {64, 80, 128, 256};
  for (int i = 0; i < 64; ++i) {
    Call c;
    AttentionQuery& q = c.query;
    q.dtype = ElementType(i % 3);
    q.head_dim = q.head_dim_v = dims[i / 3 % 4];
    q.causal = CausalMode(i / 12 % 3);
    q.need_lse = i % 2;
    q.window = i % 5 == 0;
    const uint64_t hkv = i % 4 == 0 ? 32 : 8;
    q.shape = {1 + uint64_t(i % 2), 32, hkv, i % 3 == 0 ? 4096u : 1u + i % 7, 4096};
    c.call.shape = q.shape;
    c.call.strides = contiguous_bhsd(q.shape, q.head_dim, q.head_dim_v);
    if (q.window) c.call.window_left = 1024;
    out.push_back(c);
  }
  return out;
}

void report_allocations(benchmark::State& state, uint64_t before) {
  state.counters["allocs/call"] =
      benchmark::Counter(double(g_allocations.load() - before) / double(state.iterations()));
  state.counters["kernels"] = double(library().kernels().size());
}

void BM_Select(benchmark::State& state) {
  const Library& l = library();
  const std::vector<Call> c = calls();
  size_t i = 0;
  const uint64_t before = g_allocations.load();
  for (auto _ : state) benchmark::DoNotOptimize(&l.select(c[i++ & 63].query));
  report_allocations(state, before);
}
BENCHMARK(BM_Select);

void BM_SelectAndLaunchPlan(benchmark::State& state) {
  const Library& l = library();
  const std::vector<Call> c = calls();
  LaunchPlan plan;
  size_t i = 0;
  const uint64_t before = g_allocations.load();
  for (auto _ : state) {
    const Call& call = c[i++ & 63];
    Library::launch_plan(l.select(call.query), call.call, plan);
    benchmark::DoNotOptimize(plan);
  }
  report_allocations(state, before);
}
BENCHMARK(BM_SelectAndLaunchPlan);
BENCHMARK(BM_SelectAndLaunchPlan)->Threads(8)->UseRealTime();

void BM_SelectAndDispatchPlan(benchmark::State& state) {  // the allocating DispatchPlan, for comparison
  const Library& l = library();
  const std::vector<Call> c = calls();
  size_t i = 0;
  const uint64_t before = g_allocations.load();
  for (auto _ : state) {
    const Call& call = c[i++ & 63];
    benchmark::DoNotOptimize(Library::plan(l.select(call.query), call.call));
  }
  report_allocations(state, before);
}
BENCHMARK(BM_SelectAndDispatchPlan);

}  // namespace

BENCHMARK_MAIN();
namespace {
void BM_LaunchPlanOnly(benchmark::State& state) {
  const Library& l = library();
  const std::vector<Call> c = calls();
  std::vector<const KernelEntry*> k;
  for (const Call& x : c) k.push_back(&l.select(x.query));
  LaunchPlan plan;
  size_t i = 0;
  const size_t m = state.range(0);
  for (auto _ : state) {
    const size_t j = (i++ & 63) * m;
    Library::launch_plan(*k[j], c[j].call, plan);
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_LaunchPlanOnly)->Arg(0)->Arg(1);
}
namespace {
// One call repeated, as in a decode loop (the same shape every token) or a
// prefill: the steady state of an app.
void BM_SelectAndLaunchPlanSameCall(benchmark::State& state) {
  const Library& l = library();
  const Call c = calls()[state.range(0)];
  LaunchPlan plan;
  const uint64_t before = g_allocations.load();
  for (auto _ : state) {
    Library::launch_plan(l.select(c.query), c.call, plan);
    benchmark::DoNotOptimize(plan);
  }
  report_allocations(state, before);
  state.SetLabel(std::string(l.select(c.query).name));
}
BENCHMARK(BM_SelectAndLaunchPlanSameCall)->Arg(1)->Arg(3);
}
namespace {
// A serving step (issue 37's mixed batch): 1 prefill chunk of 2048 tokens and
// 63 decodes at 4k-32k context, GQA 32/4 (8), page size 16, f16 and q8_0
// caches. plan_batch once per step (its vectors keep their capacity), then
// launch_plan once per layer with the plan: the figures for "plan once, run
// per layer"; allocations per iteration are counted.
const Library& serving_library() {
  static const Library l = Library::load_from_memory(test::manifest_for(
      R"({"dtype": "float16", "head_dim": 128, "layout": "varlen", "kv_cache": "paged", "causal": "bottom_right",
          "kv_dtype": ["float16", "q8_0"]})"));
  return l;
}
struct ServingStep {
  ForwardCall call;
  std::vector<int32_t> cu_q = {0}, lengths, table;
};
ServingStep serving_step() {
  ServingStep s;
  const uint64_t batch = 64, page = 16;
  uint64_t longest = 0;
  for (uint64_t b = 0; b < batch; ++b) {
    const int32_t q = b == 0 ? 2048 : 1;
    // 4k .. 32k evenly spaced, as docs/serving.md profiles it (--seqlens-k 2048,4096..32768x63)
    const int32_t keys = b == 0 ? 2048 : int32_t(std::llround(4096 + double(b - 1) * (32768 - 4096) / 62));
    s.cu_q.push_back(s.cu_q.back() + q);
    s.lengths.push_back(keys);
    longest = std::max<uint64_t>(longest, uint64_t(keys));
  }
  const uint64_t max_pages = (longest + page - 1) / page;
  s.call.shape = {batch, 32, 4, 2048, longest};
  s.call.total_q = uint64_t(s.cu_q.back());
  s.call.page_size = page;
  s.call.max_pages = max_pages;
  s.call.num_pages = batch * max_pages;
  return s;
}
void BM_ServingStepPlanBatch(benchmark::State& state) {
  const KernelEntry& kernel = serving_library().kernels().at(size_t(state.range(0)));
  ServingStep s = serving_step();
  s.call.strides = packed_paged(s.call.shape, s.call.total_q, s.call.page_size, 128, 128, kernel.info.kv_format);
  BatchPlan plan;
  Library::plan_batch(kernel, s.call, s.cu_q, s.lengths, plan);  // the first step sizes the vectors
  const uint64_t before = g_allocations.load();
  for (auto _ : state) {
    Library::plan_batch(kernel, s.call, s.cu_q, s.lengths, plan);
    benchmark::DoNotOptimize(plan);
  }
  report_allocations(state, before);
  state.SetLabel(kernel.name + ": " + std::to_string(plan.work.size()) + " work items, " +
                 std::to_string(plan.merge_count) + " split blocks");
}
BENCHMARK(BM_ServingStepPlanBatch)->Arg(0)->Arg(1);
void BM_ServingStepLaunchPlanPerLayer(benchmark::State& state) {
  const KernelEntry& kernel = serving_library().kernels().at(size_t(state.range(0)));
  ServingStep s = serving_step();
  s.call.strides = packed_paged(s.call.shape, s.call.total_q, s.call.page_size, 128, 128, kernel.info.kv_format);
  BatchPlan batch;
  Library::plan_batch(kernel, s.call, s.cu_q, s.lengths, batch);
  s.call.batch_plan = &batch;
  LaunchPlan plan;
  const uint64_t before = g_allocations.load();
  for (auto _ : state) {
    Library::launch_plan(kernel, s.call, plan);
    benchmark::DoNotOptimize(plan);
  }
  report_allocations(state, before);
  state.SetLabel(kernel.name);
}
BENCHMARK(BM_ServingStepLaunchPlanPerLayer)->Arg(0)->Arg(1);
}  // namespace
