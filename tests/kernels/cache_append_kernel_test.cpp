// Cache writes (spec kind cache_append): a step's new keys and values written
// into paged and dense caches at each sequence's cache_seqlens, packed
// (varlen) or dense new rows, stored as the spec's dtype or quantized on
// write (q8_0, q4_0, fp8_e4m3). The generated kernel runs on the cpu backend
// with every detector on; the whole cache, bytes the write must not touch
// included, is compared bit for bit with the initial cache plus each new row
// stored by reference::quantize_rows_float32 (llama.cpp's quantizers, written
// independently). Then the attention of the same cache reads the rows back;
// and calls that would write outside a sequence's pages are refused before
// anything runs.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <span>

#include "mfagen/cache_append_dispatch.h"
#include "mfagen/cpu/backend.h"
#include "mfagen/cpu/execute_dispatch.h"
#include "plan/dispatch_info.h"
#include "plan/kernel_plan.h"
#include "cache_write.h"
#include "quantized_kv.h"
#include "random_inputs.h"
#include "render/render_forward.h"
#include "spec/canonical.h"

namespace mfagen::test {
namespace {

using reference::ElementType;

struct AppendCase {
  spec::DType dtype = spec::DType::float16;
  uint32_t head_dim = 64, head_dim_v = 64;
  spec::KvDType kv_dtype = spec::KvDType::as_dtype;
  bool paged = true, varlen = true;
  std::vector<uint32_t> new_rows;       // per sequence (dense new rows: all equal)
  std::vector<int32_t> cache_seqlens;   // per sequence, before the write
  uint32_t page_size = 4, cache_rows = 0;  // cache_rows: dense caches
  uint32_t heads_kv = 2;
  float k_scale = 1, v_scale = 1;
};

spec::KernelSpec spec_of(const AppendCase& c);
void PrintTo(const AppendCase& c, std::ostream* os) { *os << spec_of(c).name; }

spec::KernelSpec spec_of(const AppendCase& c) {
  spec::KernelSpec s;
  s.kind = spec::Kind::cache_append;
  s.dtype = c.dtype;
  s.head_dim = c.head_dim;
  s.head_dim_v = c.head_dim_v;
  s.kv_dtype = c.kv_dtype;
  s.kv_cache = c.paged ? spec::KvCache::paged : spec::KvCache::dense;
  s.layout = c.varlen ? spec::Layout::varlen : spec::Layout::dense;
  s.name = spec::derived_name(s);
  return s;
}

ElementType element_type(spec::DType t) {
  return t == spec::DType::float16 ? ElementType::float16
         : t == spec::DType::bfloat16 ? ElementType::bfloat16
                                      : ElementType::float32;
}

// The write as the reference describes it (reference/cache_write.h).
reference::CacheWrite reference_write(const AppendCase& c, bool is_k) {
  reference::CacheWrite w;
  w.type = element_type(c.dtype);
  if (c.kv_dtype == spec::KvDType::q8_0) w.quant = reference::KvQuant::q8_0;
  if (c.kv_dtype == spec::KvDType::q4_0) w.quant = reference::KvQuant::q4_0;
  if (c.kv_dtype == spec::KvDType::fp8_e4m3) w.quant = reference::KvQuant::fp8_e4m3;
  w.scale = is_k ? c.k_scale : c.v_scale;
  w.heads_kv = c.heads_kv;
  w.columns = is_k ? c.head_dim : c.head_dim_v;
  w.new_rows = c.new_rows;
  w.cache_seqlens = c.cache_seqlens;
  return w;
}

struct AppendRun {
  cpu::DispatchResult result;
  std::vector<std::byte> k_cache, v_cache, want_k, want_v;
};

AppendRun run_append(const AppendCase& c, uint64_t seed) {
  const plan::KernelPlan plan = plan::plan_kernel(spec_of(c));
  const ForwardKernelInfo info = plan::forward_kernel_info(plan);
  const uint64_t batch = c.cache_seqlens.size();
  CacheAppendCall call;
  call.batch = batch;
  call.heads_kv = c.heads_kv;
  call.new_rows = std::max<uint64_t>(1, *std::max_element(c.new_rows.begin(), c.new_rows.end()));
  std::vector<int32_t> cu = {0};
  for (uint32_t n : c.new_rows) cu.push_back(cu.back() + int32_t(n));
  if (c.varlen) call.total_new = uint64_t(cu.back());
  // Pages: each sequence's blocks in shuffled order among spare pages no one writes.
  std::vector<int32_t> table;
  if (c.paged) {
    call.page_size = c.page_size;
    uint64_t most = 1;
    for (uint64_t b = 0; b < batch; ++b)
      most = std::max<uint64_t>(most, (uint64_t(c.cache_seqlens[b]) + c.new_rows[b] + c.page_size - 1) / c.page_size);
    call.max_pages = most;
    call.num_pages = batch * most + 2;
    std::vector<int32_t> pages(call.num_pages);
    std::iota(pages.begin(), pages.end(), 0);
    std::shuffle(pages.begin(), pages.end(), std::mt19937(uint32_t(seed)));
    table.assign(pages.begin(), pages.begin() + int64_t(batch * most));
  } else {
    call.cache_rows = c.cache_rows;
  }
  call.k_scale = c.k_scale;
  call.v_scale = c.v_scale;
  contiguous_append_strides(info, call);
  check_cache_append(info, call, cu, table, c.cache_seqlens);
  const DispatchPlan dispatch = plan_cache_append(info, call);

  // New rows: values exact in the dtype, made in the reference's order
  // (sequence by sequence, (Hkv, D) per row), laid out for the kernel as
  // (rows, Hkv, D) packed or (B, Hkv, S, D) dense.
  const ElementType type = element_type(c.dtype);
  const uint64_t rows = uint64_t(cu.back());
  AppendRun run;
  std::mt19937 bytes_rng(uint32_t(seed * 7 + 3));
  std::vector<uint8_t> new_bytes[2];
  for (bool is_k : {true, false}) {
    reference::CacheWrite w = reference_write(c, is_k);
    const std::vector<double> wide = reference::random_tensor(rows * c.heads_kv * w.columns, seed * 5 + is_k, type);
    const std::vector<float> values(wide.begin(), wide.end());
    new_bytes[is_k ? 0 : 1] = reference::new_rows_bytes(w, values, c.varlen ? 0 : call.new_rows);
    // The cache starts as a byte pattern: whatever the write does not touch must keep it.
    std::vector<uint8_t> initial(dispatch.buffer(is_k ? "k" : "v")->bytes);
    for (uint8_t& x : initial) x = uint8_t(bytes_rng() & 0xFF);
    if (c.paged) {
      w.page_size = c.page_size;
      w.max_pages = call.max_pages;
      w.block_table = table;
    } else {
      w.cache_rows = c.cache_rows;
    }
    const std::vector<uint8_t> want = reference::written_cache(w, initial, values);
    (is_k ? run.k_cache : run.v_cache).assign(reinterpret_cast<const std::byte*>(initial.data()),
                                             reinterpret_cast<const std::byte*>(initial.data()) + initial.size());
    (is_k ? run.want_k : run.want_v).assign(reinterpret_cast<const std::byte*>(want.data()),
                                           reinterpret_cast<const std::byte*>(want.data()) + want.size());
  }
  std::vector<uint8_t>& k_new_bytes = new_bytes[0];
  std::vector<uint8_t>& v_new_bytes = new_bytes[1];

  std::vector<int32_t> cu_buffer = cu, table_buffer = table, lengths = c.cache_seqlens;
  std::map<uint32_t, std::span<std::byte>> tensors = {
      {kAppendKCache, run.k_cache},
      {kAppendVCache, run.v_cache},
      {kAppendNewK, std::as_writable_bytes(std::span(k_new_bytes))},
      {kAppendNewV, std::as_writable_bytes(std::span(v_new_bytes))},
      {kAppendCacheSeqlens, std::as_writable_bytes(std::span(lengths))}};
  if (c.varlen) tensors[kAppendCuSeqlens] = std::as_writable_bytes(std::span(cu_buffer));
  if (c.paged) tensors[kAppendBlockTable] = std::as_writable_bytes(std::span(table_buffer));
  const auto module = cpu::compile(render::render_forward(plan), plan.entry + ".metal", cpu::CompileOptions{});
  run.result = cpu::execute(*module, dispatch, tensors);
  return run;
}

// The first byte where two caches differ, for failure messages.
std::string first_difference(const std::vector<std::byte>& got, const std::vector<std::byte>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return "byte " + std::to_string(i) + ": got " + std::to_string(int(got[i])) + ", want " +
             std::to_string(int(want[i]));
  return "none";
}

class CacheAppend : public ::testing::TestWithParam<AppendCase> {};

TEST_P(CacheAppend, WritesEveryNewRowBitExactAndNothingElse) {
  const AppendCase& c = GetParam();
  const AppendRun run = run_append(c, 11 + c.head_dim);
  EXPECT_TRUE(run.result.clean()) << run.result.findings_total() << " detector findings";
  EXPECT_TRUE(run.k_cache == run.want_k) << "k: " << first_difference(run.k_cache, run.want_k);
  EXPECT_TRUE(run.v_cache == run.want_v) << "v: " << first_difference(run.v_cache, run.want_v);
}

std::vector<AppendCase> cases() {
  using spec::DType;
  using spec::KvDType;
  std::vector<AppendCase> all;
  // A serving step on a paged cache: a prefill chunk crossing pages, a decode, a sequence with nothing new.
  all.push_back({.kv_dtype = KvDType::q8_0, .new_rows = {6, 1, 0}, .cache_seqlens = {13, 0, 5}});
  all.push_back({.dtype = DType::bfloat16, .head_dim_v = 32, .kv_dtype = KvDType::q4_0, .new_rows = {3, 2},
                 .cache_seqlens = {2, 7}, .page_size = 16});
  all.push_back({.head_dim = 40, .head_dim_v = 72, .kv_dtype = KvDType::fp8_e4m3, .varlen = false,
                 .new_rows = {2, 2, 2}, .cache_seqlens = {0, 9, 3}, .k_scale = 0.05f, .v_scale = 0.03125f});
  all.push_back({.dtype = DType::float32, .head_dim = 80, .head_dim_v = 48, .new_rows = {1, 4},
                 .cache_seqlens = {30, 1}, .page_size = 8});
  // Dense caches (B, Hkv, cache_rows, D).
  all.push_back({.dtype = DType::bfloat16, .paged = false, .new_rows = {5, 0, 2}, .cache_seqlens = {0, 20, 18},
                 .cache_rows = 20, .heads_kv = 1});
  all.push_back({.kv_dtype = KvDType::q8_0, .paged = false, .varlen = false, .new_rows = {3, 3},
                 .cache_seqlens = {4, 17}, .cache_rows = 20});
  all.push_back({.dtype = DType::float32, .head_dim = 96, .kv_dtype = KvDType::q4_0, .paged = false,
                 .new_rows = {1, 1, 1, 1}, .cache_seqlens = {0, 1, 2, 3}, .cache_rows = 4});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Writes, CacheAppend, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<AppendCase>& info) {
                           return std::to_string(info.index) + "_" + spec_of(info.param).name;
                         });

// The float32 quantizers agree with the float64 ones of the test data on
// ordinary values (they differ only where x / d lands within an ulp of a
// rounding boundary): a check that the two independent writings of the
// formats mean the same thing.
TEST(CacheAppendReference, Float32QuantizersAgreeWithTheFloat64Ones) {
  const std::vector<double> values = reference::random_tensor(64 * 32, 5, ElementType::float32);
  const std::vector<float> narrow(values.begin(), values.end());
  for (reference::KvQuant f : {reference::KvQuant::q8_0, reference::KvQuant::q4_0, reference::KvQuant::fp8_e4m3}) {
    const std::vector<uint8_t> a = reference::quantize_rows(f, values, 64, 32, 0.5);
    const std::vector<uint8_t> b = reference::quantize_rows_float32(f, narrow, 64, 32, 0.5f);
    size_t same = 0;
    for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
    EXPECT_GE(double(same), 0.99 * double(a.size())) << reference::to_string(f);
  }
}

// Calls whose rows would land outside a sequence's pages or rows, or whose
// offsets do not describe the packed rows, are refused by the host check
// before anything runs, naming the entry.
TEST(CacheAppendChecks, RefusesWritesOutsideTheCache) {
  AppendCase c{.kv_dtype = spec::KvDType::q8_0, .new_rows = {3, 1}, .cache_seqlens = {2, 5}};
  const plan::KernelPlan plan = plan::plan_kernel(spec_of(c));
  const ForwardKernelInfo info = plan::forward_kernel_info(plan);
  CacheAppendCall call{.batch = 2, .heads_kv = 2, .new_rows = 3, .total_new = 4, .page_size = 4, .num_pages = 5,
                       .max_pages = 2};
  contiguous_append_strides(info, call);
  const std::vector<int32_t> cu = {0, 3, 4}, table = {4, 1, 0, 3};
  EXPECT_NO_THROW(check_cache_append(info, call, cu, table, std::vector<int32_t>{2, 5}));
  const auto message = [&](std::vector<int32_t> cu_seqlens, std::vector<int32_t> pages, std::vector<int32_t> lengths) {
    try {
      check_cache_append(info, call, cu_seqlens, pages, lengths);
    } catch (const DispatchError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(cu, table, {2, 8}),
            "cache_seqlens[1] = 8 with 1 new rows writes past the sequence's 8 cache rows (max_pages x page_size)");
  EXPECT_EQ(message(cu, {4, 7, 0, 3}, {2, 5}),
            "block_table[0][1] = 7 is not a page of the cache (0 .. 4): new rows of sequence 0 land there");
  EXPECT_EQ(message(cu, {4, 1, 0, -1}, {2, 5}),
            "block_table[1][1] = -1 is not a page of the cache (0 .. 4): new rows of sequence 1 land there");
  EXPECT_NE(message({0, 2, 1}, table, {2, 5}).find("cu_seqlens_k[2] = 1 is below cu_seqlens_k[1] = 2"),
            std::string::npos);
  EXPECT_EQ(message(cu, table, {-1, 5}), "cache_seqlens[0] = -1 is negative");
  // Sizes the kernel cannot take are refused by the planner.
  CacheAppendCall dense = call;
  dense.page_size = 0;
  EXPECT_THROW(plan_cache_append(info, dense), DispatchError);
}

}  // namespace
}  // namespace mfagen::test
