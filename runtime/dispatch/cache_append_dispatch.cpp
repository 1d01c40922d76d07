#include "mfagen/cache_append_dispatch.h"

#include <limits>
#include <string>

#include "dispatch_checks.h"
#include "params_writer.h"

namespace mfagen {
namespace {

constexpr uint64_t kMaxRows = std::numeric_limits<int32_t>::max();

using namespace dispatch_checks;

}  // namespace

void contiguous_append_strides(const ForwardKernelInfo& kernel, CacheAppendCall& call) {
  const uint64_t d = kernel.head_dim, dv = kernel.head_dim_v, h = call.heads_kv;
  if (kernel.varlen) {
    call.k_new = {0, d, h * d};
    call.v_new = {0, dv, h * dv};
  } else {
    call.k_new = {h * call.new_rows * d, call.new_rows * d, d};
    call.v_new = {h * call.new_rows * dv, call.new_rows * dv, dv};
  }
  const uint64_t k_row = kv_row_units(kernel.kv_format, kernel.head_dim);
  const uint64_t v_row = kv_row_units(kernel.kv_format, kernel.head_dim_v);
  if (kernel.paged) {
    call.k_cache = {call.page_size * h * k_row, k_row, h * k_row};
    call.v_cache = {call.page_size * h * v_row, v_row, h * v_row};
  } else {
    call.k_cache = {h * call.cache_rows * k_row, call.cache_rows * k_row, k_row};
    call.v_cache = {h * call.cache_rows * v_row, call.cache_rows * v_row, v_row};
  }
}

DispatchPlan plan_cache_append(const ForwardKernelInfo& kernel, const CacheAppendCall& call) {
  const std::string who = "kernel " + kernel.entry;
  require(kernel.cache_append, who + " is not a cache_append kernel");
  require(call.batch >= 1 && call.heads_kv >= 1 && call.new_rows >= 1,
          "batch, heads_kv and new_rows must be at least 1");
  require(call.batch * call.heads_kv <= UINT32_MAX && call.new_rows <= kMaxRows,
          "batch x heads_kv must be below 2^32 and new_rows below 2^31 (grid dimensions)");
  if (kernel.varlen)
    require(call.total_new >= 1 && call.total_new <= kMaxRows,
            who + " takes packed new rows (layout varlen): total_new must be between 1 and 2^31-1");
  else
    require(call.total_new == 0, who + " takes dense new rows (layout dense): total_new must stay 0");
  if (kernel.paged)
    require(call.page_size >= 1 && call.num_pages >= 1 && call.max_pages >= 1 && call.num_pages <= kMaxRows &&
                call.max_pages <= kMaxRows && call.page_size <= kMaxRows / call.max_pages && call.cache_rows == 0,
            who + " writes a paged cache: page_size, num_pages and max_pages must be at least 1 with max_pages x "
                  "page_size below 2^31, and cache_rows 0");
  else
    require(call.cache_rows >= 1 && call.cache_rows <= kMaxRows && call.page_size == 0 && call.num_pages == 0 &&
                call.max_pages == 0,
            who + " writes a dense cache: cache_rows must be between 1 and 2^31-1, and the page sizes 0");
  require(kv_scales_valid(kernel.kv_format, call.k_scale, call.v_scale),
          kernel.kv_format == KvFormat::fp8_e4m3
              ? who + " writes fp8 k and v: k_scale and v_scale must be finite, nonzero float32 values"
              : who + " takes no k_scale or v_scale (only fp8_e4m3 caches do): leave them at 1");

  DispatchPlan plan;
  plan.shape = {call.batch, call.heads_kv, call.heads_kv, call.new_rows, call.new_rows};
  const uint64_t e = kernel.element_bytes;
  const uint64_t rows = kernel.varlen ? call.total_new : call.new_rows;
  const uint64_t entries = kernel.varlen ? 1 : call.batch;
  const uint64_t cache_entries = kernel.paged ? call.num_pages : call.batch;
  const uint64_t cache_rows = kernel.paged ? call.page_size : call.cache_rows;
  const uint64_t unit = kv_unit_bytes(kernel.kv_format, kernel.element_bytes);
  const uint64_t k_units = kv_row_units(kernel.kv_format, kernel.head_dim);
  const uint64_t v_units = kv_row_units(kernel.kv_format, kernel.head_dim_v);
  plan.buffers = {
      {kAppendKCache, "k", span_bytes(call.k_cache, cache_entries, call.heads_kv, cache_rows, k_units, unit, "k"), true},
      {kAppendVCache, "v", span_bytes(call.v_cache, cache_entries, call.heads_kv, cache_rows, v_units, unit, "v"), true},
      {kAppendParams, "params", 0, false},
      {kAppendNewK, "k_new", span_bytes(call.k_new, entries, call.heads_kv, rows, kernel.head_dim, e, "k_new"), false},
      {kAppendNewV, "v_new", span_bytes(call.v_new, entries, call.heads_kv, rows, kernel.head_dim_v, e, "v_new"), false},
  };
  if (kernel.varlen) plan.buffers.push_back({kAppendCuSeqlens, "cu_seqlens_k", (call.batch + 1) * 4, false});
  if (kernel.paged) plan.buffers.push_back({kAppendBlockTable, "block_table", call.batch * call.max_pages * 4, false});
  plan.buffers.push_back({kAppendCacheSeqlens, "cache_seqlens", call.batch * 4, false});

  // AppendParams of templates/cache_append.metal.mustache.
  ParamsWriter w;
  for (const Strides3* s : {&call.k_new, &call.v_new, &call.k_cache, &call.v_cache})
    w.put(uint64_t(s->batch)).put(uint64_t(s->head)).put(uint64_t(s->row));
  w.put(uint32_t(call.batch)).put(uint32_t(call.heads_kv)).put(uint32_t(call.new_rows)).put(uint32_t(call.cache_rows));
  w.put(uint32_t(call.page_size)).put(uint32_t(call.max_pages)).put(uint32_t(call.num_pages));
  w.put(uint32_t(call.total_new)).put(float(call.k_scale)).put(float(call.v_scale));
  plan.params = w.finish(8);
  plan.buffers[2].bytes = plan.params.size();

  KernelLaunch launch;
  launch.entry = kernel.entry;
  launch.threadgroups = {uint32_t(ceil_div(kernel.head_dim, 32) + ceil_div(kernel.head_dim_v, 32)),
                         uint32_t(call.new_rows), uint32_t(call.batch * call.heads_kv)};
  launch.threads_per_threadgroup = {32, 1, 1};
  for (const BufferRequirement& b : plan.buffers) launch.buffers.push_back(b.index);
  plan.launches.push_back(std::move(launch));
  return plan;
}

void check_cache_append(const ForwardKernelInfo& kernel, const CacheAppendCall& call,
                        std::span<const int32_t> cu_seqlens, std::span<const int32_t> block_table,
                        std::span<const int32_t> cache_seqlens) {
  require(cache_seqlens.size() == call.batch, "cache_seqlens has " + std::to_string(cache_seqlens.size()) +
                                                  " entries; the batch has " + std::to_string(call.batch));
  if (kernel.varlen)
    check_cu_seqlens(cu_seqlens.data(), cu_seqlens.size(), call.batch, call.total_new, call.new_rows, "cu_seqlens_k");
  if (kernel.paged)
    require(block_table.size() == call.batch * call.max_pages,
            "block_table has " + std::to_string(block_table.size()) + " entries; (batch, max_pages) is " +
                std::to_string(call.batch) + " x " + std::to_string(call.max_pages));
  const uint64_t capacity = kernel.paged ? call.max_pages * call.page_size : call.cache_rows;
  for (uint64_t b = 0; b < call.batch; ++b) {
    const uint64_t rows = kernel.varlen ? uint64_t(cu_seqlens[b + 1] - cu_seqlens[b]) : call.new_rows;
    const int64_t length = cache_seqlens[b];
    require(length >= 0, "cache_seqlens[" + std::to_string(b) + "] = " + std::to_string(length) + " is negative");
    require(uint64_t(length) + rows <= capacity,
            "cache_seqlens[" + std::to_string(b) + "] = " + std::to_string(length) + " with " + std::to_string(rows) +
                " new rows writes past the sequence's " + std::to_string(capacity) + " cache rows" +
                (kernel.paged ? " (max_pages x page_size)" : ""));
    if (!kernel.paged || rows == 0) continue;
    for (uint64_t block = uint64_t(length) / call.page_size; block * call.page_size < uint64_t(length) + rows; ++block) {
      const int64_t page = block_table[b * call.max_pages + block];
      require(page >= 0 && uint64_t(page) < call.num_pages,
              "block_table[" + std::to_string(b) + "][" + std::to_string(block) + "] = " + std::to_string(page) +
                  " is not a page of the cache (0 .. " + std::to_string(call.num_pages - 1) +
                  "): new rows of sequence " + std::to_string(b) + " land there");
    }
  }
}

}  // namespace mfagen
