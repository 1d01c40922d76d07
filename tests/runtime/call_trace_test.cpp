// The call trace (mfagen/call_trace.h, MFAGEN_TRACE): counts per key merged
// over threads that exited and threads still running, misses with their
// reason, nothing when off, the summary text, a full table, no allocation
// on the hot path, a CpuBackend run, and the summary printed at exit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <new>
#include <optional>
#include <thread>

#include "generated_manifest.h"
#include "mfagen/call_trace.h"
#include "mfagen/cpu_backend.h"

// Heap allocations of the current thread, counted by replacing the global
// operator new (as runtime_bench does) for the whole runtime_test binary.
namespace {
thread_local uint64_t t_allocations = 0;
}  // namespace

// GCC pairs the replaced new with free() and warns; both sides are ours.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  ++t_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace mfagen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

const Library& traced_library() {
  static const Library l = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": "float16", "head_dim": 64, "causal": ["none", "bottom_right"]},
    {"kind": "decode", "dtype": "bfloat16", "head_dim": 128, "gqa": false, "lse": false},
    {"dtype": "float16", "head_dim": 128, "causal": "bottom_right", "window": true},
    {"kind": "decode", "dtype": "float16", "head_dim": 128, "causal": "top_left"},
    {"dtype": "float32", "head_dim": 128, "gqa": false},
    {"dtype": "float32", "head_dim": 80, "lse": false},
    {"kind": "backward", "dtype": "float32", "head_dim": 64}]})"));
  return l;
}

AttentionQuery query(ElementType dtype, uint32_t d, CausalMode causal, AttentionShape shape) {
  AttentionQuery q;
  q.dtype = dtype;
  q.head_dim = q.head_dim_v = d;
  q.causal = causal;
  q.need_lse = true;
  q.shape = shape;
  return q;
}

const KernelEntry& kernel(const AttentionQuery& q) { return traced_library().select(q); }
const KernelEntry& forward_f16_d64() {
  return kernel(query(ElementType::float16, 64, CausalMode::bottom_right, {1, 8, 2, 100, 200}));
}

// The counts of the key with these kernel (or miss reason), backend and sequence lengths.
const CallCount* find_count(const CallStatistics& s, std::string_view kernel, std::string_view backend, uint64_t sq,
                            uint64_t sk) {
  for (const CallCount& c : s.counts)
    if (!c.miss && c.kernel == kernel && c.backend == backend && c.seq_q == sq && c.seq_k == sk) return &c;
  return nullptr;
}
const CallCount* find_miss(const CallStatistics& s, MissReason reason) {
  for (const CallCount& c : s.counts)
    if (c.miss && c.reason == reason) return &c;
  return nullptr;
}

class CallTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    traced_library();  // generated before tracing starts
    set_call_trace_enabled(true);
    reset_call_statistics();
  }
  void TearDown() override {
    set_call_trace_enabled(false);
    reset_call_statistics();
  }
};

TEST_F(CallTrace, CountsPerKeyMergeThreadsThatExitedAndThreadsStillRunning) {
  const KernelEntry& fwd = forward_f16_d64();
  const AttentionShape prefill{1, 8, 2, 100, 200}, decode_shape{2, 4, 4, 3, 1000};
  AttentionQuery decode_query = query(ElementType::bfloat16, 128, CausalMode::none, decode_shape);
  decode_query.need_lse = false;
  const KernelEntry& decode = kernel(decode_query);
  ASSERT_EQ(decode.kind, KernelKind::decode);

  std::thread([&] {
    for (int i = 0; i < 3; ++i) trace_call(fwd, prefill, "cpu");
    trace_call(fwd, prefill, "metal");
  }).join();
  std::promise<void> counted, read;
  std::thread running([&] {
    for (int i = 0; i < 2; ++i) trace_call(fwd, prefill, "cpu");
    for (int i = 0; i < 4; ++i) trace_call(decode, decode_shape, "cpu");
    counted.set_value();
    read.get_future().wait();  // still running while its counts are read
  });
  counted.get_future().wait();
  for (int pass = 0; pass < 2; ++pass) {  // before and after the running thread exits
    const CallStatistics s = call_statistics();
    EXPECT_EQ(s.counts.size(), 3u);
    EXPECT_EQ(s.kernel_calls(), 10u);
    EXPECT_EQ(s.misses(), 0u);
    const CallCount* cpu = find_count(s, fwd.name, "cpu", 100, 200);
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->calls, 5u);
    EXPECT_EQ(cpu->kind, KernelKind::forward);
    EXPECT_EQ(cpu->dtype, ElementType::float16);
    EXPECT_EQ(cpu->head_dim, 64u);
    EXPECT_EQ(cpu->head_dim_v, 64u);
    EXPECT_EQ(cpu->causal, CausalMode::bottom_right);
    EXPECT_TRUE(cpu->gqa);  // 8 query heads over 2
    EXPECT_TRUE(cpu->lse);
    EXPECT_EQ(cpu->mask, MaskInput::none);
    EXPECT_FALSE(cpu->window || cpu->softcap || cpu->alibi);
    ASSERT_NE(find_count(s, fwd.name, "metal", 100, 200), nullptr);
    EXPECT_EQ(find_count(s, fwd.name, "metal", 100, 200)->calls, 1u);
    const CallCount* dec = find_count(s, decode.name, "cpu", 3, 1000);
    ASSERT_NE(dec, nullptr);
    EXPECT_EQ(dec->calls, 4u);
    EXPECT_EQ(dec->kind, KernelKind::decode);
    EXPECT_EQ(dec->dtype, ElementType::bfloat16);
    EXPECT_FALSE(dec->gqa);  // 4 heads over 4
    EXPECT_FALSE(dec->lse);  // the kernel writes none
    EXPECT_EQ(s.counts.front().calls, 5u);  // most calls first
    if (pass == 0) {
      read.set_value();
      running.join();
    }
  }
}

TEST_F(CallTrace, MissesAreCountedWithTheirReason) {
  struct Case {
    AttentionQuery query;
    MissReason reason;
  };
  const AttentionShape prefill{1, 8, 2, 100, 200}, heads_equal{1, 4, 4, 100, 200};
  std::vector<Case> cases;
  cases.push_back({query(ElementType::float16, 96, CausalMode::none, prefill), MissReason::dtype_or_head_dims});
  cases.push_back({query(ElementType::bfloat16, 64, CausalMode::none, prefill), MissReason::dtype_or_head_dims});
  AttentionQuery backward = query(ElementType::float16, 64, CausalMode::none, prefill);
  backward.kind = KernelKind::backward;
  cases.push_back({backward, MissReason::no_backward_kernel});
  cases.push_back({query(ElementType::float32, 64, CausalMode::none, prefill), MissReason::only_backward_kernels});
  cases.push_back({query(ElementType::float16, 64, CausalMode::top_left, prefill), MissReason::causal_mode});
  AttentionQuery softcap = query(ElementType::float16, 64, CausalMode::bottom_right, prefill);
  softcap.softcap = true;
  cases.push_back({softcap, MissReason::features});
  cases.push_back({query(ElementType::float16, 128, CausalMode::bottom_right, prefill), MissReason::features});
  cases.push_back({query(ElementType::float16, 128, CausalMode::top_left, prefill), MissReason::decode_only});
  cases.push_back({query(ElementType::float32, 128, CausalMode::none, prefill), MissReason::needs_gqa});
  cases.push_back({query(ElementType::float32, 80, CausalMode::none, heads_equal), MissReason::needs_lse});
  AttentionQuery decode_lse = query(ElementType::bfloat16, 128, CausalMode::none, {1, 4, 4, 2, 50});
  cases.push_back({decode_lse, MissReason::needs_lse});
  decode_lse.shape = {1, 8, 2, 2, 50};  // fails lse and gqa: the first failure in rule order
  cases.push_back({decode_lse, MissReason::needs_gqa});

  for (const Case& c : cases) {
    reset_call_statistics();
    EXPECT_EQ(traced_library().find(c.query), nullptr) << to_string(c.reason);
    EXPECT_EQ(traced_library().find(c.query), nullptr);
    const CallStatistics s = call_statistics();
    ASSERT_EQ(s.counts.size(), 1u) << to_string(c.reason);
    const CallCount& miss = s.counts.front();
    EXPECT_TRUE(miss.miss);
    EXPECT_EQ(miss.reason, c.reason) << "expected: " << to_string(c.reason) << "; got: " << to_string(miss.reason);
    EXPECT_EQ(miss.calls, 2u);
    EXPECT_EQ(miss.kind, c.query.kind);
    EXPECT_EQ(miss.dtype, c.query.dtype);
    EXPECT_EQ(miss.head_dim, c.query.head_dim);
    EXPECT_EQ(miss.seq_q, c.query.shape.seq_q);
    EXPECT_EQ(miss.seq_k, c.query.shape.seq_k);
    EXPECT_EQ(miss.causal, c.query.causal);
    EXPECT_EQ(miss.softcap, c.query.softcap);
    EXPECT_EQ(miss.gqa, c.query.shape.heads_q != c.query.shape.heads_kv);
    EXPECT_TRUE(miss.lse);  // the query needs lse
    EXPECT_TRUE(miss.kernel.empty() && miss.backend.empty());
  }

  // select() counts its miss too (it calls find); hits are not misses.
  reset_call_statistics();
  EXPECT_THROW(traced_library().select(cases.front().query), SelectionError);
  EXPECT_NE(traced_library().find(query(ElementType::float16, 64, CausalMode::none, prefill)), nullptr);
  const CallStatistics s = call_statistics();
  EXPECT_EQ(s.misses(), 1u);
  EXPECT_EQ(s.kernel_calls(), 0u);  // find() alone does not count a kernel call
  EXPECT_NE(find_miss(s, MissReason::dtype_or_head_dims), nullptr);
}

TEST_F(CallTrace, CountsNothingWhenOff) {
  set_call_trace_enabled(false);
  EXPECT_FALSE(call_trace_enabled());
  const AttentionQuery missing = query(ElementType::float16, 96, CausalMode::none, {1, 8, 2, 100, 200});
  trace_call(forward_f16_d64(), {1, 8, 2, 100, 200}, "cpu");
  EXPECT_EQ(traced_library().find(missing), nullptr);
  EXPECT_TRUE(call_statistics().counts.empty());

  set_call_trace_enabled(true);  // the same calls, on
  EXPECT_TRUE(call_trace_enabled());
  trace_call(forward_f16_d64(), {1, 8, 2, 100, 200}, "cpu");
  EXPECT_EQ(traced_library().find(missing), nullptr);
  const CallStatistics s = call_statistics();
  EXPECT_EQ(s.kernel_calls(), 1u);
  EXPECT_EQ(s.misses(), 1u);
}

TEST_F(CallTrace, ResetForgetsCountsOfEveryThread) {
  std::promise<void> counted, reset, counted_again;
  std::thread other([&] {
    trace_call(forward_f16_d64(), {1, 8, 2, 100, 200}, "cpu");
    counted.set_value();
    reset.get_future().wait();
    trace_call(forward_f16_d64(), {1, 8, 2, 7, 9}, "cpu");
    counted_again.set_value();
  });
  trace_call(forward_f16_d64(), {1, 8, 2, 100, 200}, "cpu");
  counted.get_future().wait();
  EXPECT_EQ(call_statistics().kernel_calls(), 2u);
  reset_call_statistics();
  EXPECT_TRUE(call_statistics().counts.empty());
  reset.set_value();
  counted_again.get_future().wait();
  other.join();
  const CallStatistics s = call_statistics();
  ASSERT_EQ(s.counts.size(), 1u);
  EXPECT_EQ(s.counts.front().seq_q, 7u);
  EXPECT_EQ(s.counts.front().calls, 1u);
}

TEST_F(CallTrace, SummaryTableNamesKernelBackendShapeCountsAndMissReasons) {
  const KernelEntry& fwd = forward_f16_d64();
  for (int i = 0; i < 12; ++i) trace_call(fwd, {1, 8, 2, 100, 200}, "cpu");
  AttentionQuery window = query(ElementType::float16, 128, CausalMode::bottom_right, {1, 4, 4, 4096, 4096});
  window.window = true;
  trace_call(kernel(window), window.shape, "metal");
  AttentionQuery missing = query(ElementType::float16, 96, CausalMode::none, {1, 8, 2, 100, 200});
  EXPECT_EQ(traced_library().find(missing), nullptr);
  EXPECT_EQ(format_call_statistics(call_statistics()),
            "mfagen call trace: 13 kernel calls, 1 query without a kernel\n"
            "  calls  kernel                                  backend  kind     dtype      D   Dv    Sq    Sk  causal        features\n"
            "     12  attn_fwd_f16_d64_causal_br_gqa          cpu      forward  float16   64   64   100   200  bottom_right  gqa lse\n"
            "      1  attn_fwd_f16_d128_causal_br_gqa_window  metal    forward  float16  128  128  4096  4096  bottom_right  window lse\n"
            "queries without a kernel:\n"
            "  calls  reason                              kind     dtype     D  Dv   Sq   Sk  causal  features\n"
            "      1  no kernel for this dtype, D and Dv  forward  float16  96  96  100  200  none    gqa lse\n");
  reset_call_statistics();
  EXPECT_EQ(format_call_statistics(call_statistics()),
            "mfagen call trace: 0 kernel calls, 0 queries without a kernel\n");
}

TEST_F(CallTrace, AFullTableCountsFurtherKeysAsUntrackedAndKeepsCountingItsKeys) {
  KernelEntry long_name = forward_f16_d64();
  long_name.name = std::string(kMaxTracedKernelName, 'k') + "_beyond";  // kept in part, marked
  std::thread([&] {
    for (uint64_t i = 0; i < kMaxTracedKeysPerThread + 10; ++i) trace_call(long_name, {1, 1, 1, 1, 1 + i}, "cpu");
    trace_call(long_name, {1, 1, 1, 1, 1}, "cpu");  // a key the table holds
  }).join();
  const CallStatistics s = call_statistics();
  EXPECT_EQ(s.counts.size(), kMaxTracedKeysPerThread);
  EXPECT_EQ(s.untracked, 10u);
  const std::string cut = std::string(kMaxTracedKernelName, 'k') + "...";
  ASSERT_NE(find_count(s, cut, "cpu", 1, 1), nullptr);
  EXPECT_EQ(find_count(s, cut, "cpu", 1, 1)->calls, 2u);
  EXPECT_THAT(format_call_statistics(s), HasSubstr("10 more calls not itemized: a thread's table was full"));
}

TEST_F(CallTrace, FindAndLaunchPlanAllocateNothingPerCallWithTracingOn) {
  const Library& lib = traced_library();
  const std::vector<AttentionQuery> queries = {
      query(ElementType::float16, 64, CausalMode::bottom_right, {1, 8, 2, 100, 200}),  // found
      query(ElementType::float16, 96, CausalMode::none, {1, 8, 2, 100, 200}),          // no such head dims
      query(ElementType::float32, 128, CausalMode::none, {1, 8, 2, 100, 200}),         // needs gqa
  };
  ForwardCall call;
  LaunchPlan plan;
  auto round = [&](uint64_t i) {
    for (const AttentionQuery& q : queries)
      if (const KernelEntry* k = lib.find(q)) {
        call.shape = q.shape;
        call.shape.seq_k = 1 + i % 100;  // new keys for the first 100 rounds
        call.strides = contiguous_bhsd(call.shape, q.head_dim, q.head_dim_v);
        Library::launch_plan(*k, call, plan);
        trace_call(*k, plan.shape, "cpu");
      }
  };
  round(0);  // this thread's first traced call allocates its table
  const uint64_t before = t_allocations;
  for (uint64_t i = 1; i <= 1000; ++i) round(i);
  EXPECT_EQ(t_allocations - before, 0u);
  Library::plan(*lib.find(queries[0]), call);  // the counter sees allocations
  EXPECT_GT(t_allocations - before, 0u);
  const CallStatistics s = call_statistics();
  EXPECT_EQ(s.kernel_calls(), 1001u);
  EXPECT_EQ(s.misses(), 2002u);
  EXPECT_EQ(s.untracked, 0u);
}

// Selection with a device's capabilities is the same hot path: a TensorOps
// kernel taken, skipped for its simdgroup_matrix twin, or refused (a miss
// counted as device_capabilities) without allocating.
TEST_F(CallTrace, FindWithDeviceCapabilitiesAllocatesNothingPerCall) {
  const Library lib = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": "float16", "head_dim": 64, "target": ["apple10", "apple9"]},
    {"dtype": "float32", "head_dim": 32, "target": "apple10"}]})"));
  const AttentionQuery twins = query(ElementType::float16, 64, CausalMode::none, {1, 8, 2, 100, 200});
  const AttentionQuery only_tensor_ops = query(ElementType::float32, 32, CausalMode::none, {1, 8, 2, 100, 200});
  const DeviceCapabilities m5 = CpuBackend().capabilities(), without = CpuBackend::kNoTensorOps;
  ASSERT_TRUE(lib.find(twins, m5)->requirements.tensor_ops);
  ASSERT_FALSE(lib.find(twins, without)->requirements.tensor_ops);
  lib.find(only_tensor_ops, without);  // this thread's first traced miss allocates its table
  reset_call_statistics();
  const uint64_t before = t_allocations;
  uint64_t found = 0;
  for (int i = 0; i < 1000; ++i)
    for (const DeviceCapabilities& device : {m5, without})
      for (const AttentionQuery& q : {twins, only_tensor_ops}) found += lib.find(q, device) != nullptr;
  EXPECT_EQ(t_allocations - before, 0u);
  EXPECT_EQ(found, 3000u);
  const CallStatistics s = call_statistics();
  EXPECT_EQ(s.misses(), 1000u);
  const CallCount* miss = find_miss(s, MissReason::device_capabilities);
  ASSERT_NE(miss, nullptr);
  EXPECT_EQ(miss->calls, 1000u);
  EXPECT_THAT(format_call_statistics(s), HasSubstr(std::string(to_string(MissReason::device_capabilities))));
}

TEST_F(CallTrace, CpuBackendRunsAreCounted) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mfagen_call_trace_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Library lib =
      Library::load(test::generate_into(R"({"kernels": [{"dtype": "float16", "head_dim": 32}]})", dir));
  CpuBackend backend;
  AttentionQuery q = query(ElementType::float16, 32, CausalMode::none, {1, 2, 1, 5, 9});
  const KernelEntry& k = lib.select(q);
  ForwardCall call;
  call.shape = q.shape;
  call.strides = contiguous_bhsd(call.shape, 32, 32);
  const DispatchPlan slow = Library::plan(k, call);
  const LaunchPlan fast = Library::launch_plan(k, call);
  std::map<uint32_t, std::vector<std::byte>> storage;
  TensorMap tensors;
  for (const BufferRequirement& b : slow.buffers)
    if (!b.scratch && b.index != kForwardParams) tensors[b.index] = storage[b.index] = std::vector<std::byte>(b.bytes);
  backend.run(lib, k, slow, tensors);
  backend.run(lib, k, fast, tensors);  // the LaunchPlan path: counted once too
  fs::remove_all(dir);
  const CallStatistics s = call_statistics();
  ASSERT_EQ(s.counts.size(), 1u);
  EXPECT_EQ(s.counts.front().kernel, k.name);
  EXPECT_EQ(s.counts.front().backend, "cpu");
  EXPECT_EQ(s.counts.front().seq_q, 5u);
  EXPECT_EQ(s.counts.front().seq_k, 9u);
  EXPECT_TRUE(s.counts.front().gqa);
  EXPECT_EQ(s.counts.front().calls, 2u);
}

// Sets (or, with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The child of a death test runs its statement in a fresh process (the
// "threadsafe" style re-executes the test binary), where MFAGEN_TRACE is
// read at the first traced call and the summary printed at exit.
void trace_and_exit(bool enable_from_code = false) {
  if (enable_from_code) set_call_trace_enabled(true);
  trace_call(forward_f16_d64(), {1, 8, 2, 100, 200}, "cpu");
  trace_call(forward_f16_d64(), {1, 8, 2, 100, 200}, "cpu");
  traced_library().find(query(ElementType::float16, 96, CausalMode::none, {1, 8, 2, 100, 200}));
  std::fprintf(stderr, "kernel calls counted: %llu\n", (unsigned long long)call_statistics().kernel_calls());
  std::exit(0);
}

TEST(CallTraceDeathTest, MfagenTracePrintsTheSummaryToStderrAtExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv trace("MFAGEN_TRACE", "1");
  EXPECT_EXIT(trace_and_exit(), ::testing::ExitedWithCode(0),
              AllOf(HasSubstr("kernel calls counted: 2\n"),
                    HasSubstr("mfagen call trace: 2 kernel calls, 1 query without a kernel\n"),
                    HasSubstr("      2  attn_fwd_f16_d64_causal_br_gqa  cpu      forward  float16  64  64  100  200"),
                    HasSubstr("      1  no kernel for this dtype, D and Dv  forward  float16  96  96  100  200")));
}

TEST(CallTraceDeathTest, TracingSwitchedOnFromCodePrintsNoSummary) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv trace("MFAGEN_TRACE", nullptr);
  EXPECT_EXIT(trace_and_exit(true), ::testing::ExitedWithCode(0),
              AllOf(HasSubstr("kernel calls counted: 2\n"), Not(HasSubstr("mfagen call trace"))));
}

TEST(CallTraceDeathTest, MfagenTraceZeroTracesNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv trace("MFAGEN_TRACE", "0");
  EXPECT_EXIT(trace_and_exit(), ::testing::ExitedWithCode(0),
              AllOf(HasSubstr("kernel calls counted: 0\n"), Not(HasSubstr("mfagen call trace"))));
}

}  // namespace
}  // namespace mfagen
