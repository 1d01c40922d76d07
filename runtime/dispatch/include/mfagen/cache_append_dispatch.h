// Dispatch planning for cache_append kernels (spec kind cache_append): a
// serving step's new keys and values written into a KV cache, paged or dense,
// at each sequence's cache_seqlens, quantized for a quantized cache. The
// cache is bound where the attention kernels read k and v, with the same
// block table and lengths; the new rows at their own indices.
#pragma once

#include <cstdint>
#include <span>

#include "mfagen/forward_dispatch.h"

namespace mfagen {

// Buffer indices of cache_append kernels: the caches at the attention's k
// and v, the new rows at 8 and 9 (indices no cache_append kernel uses for
// anything else), the packed rows' offsets at cu_seqlens_k's.
inline constexpr uint32_t kAppendKCache = kForwardK, kAppendVCache = kForwardV, kAppendParams = kForwardParams,
                          kAppendNewK = 8, kAppendNewV = 9, kAppendCuSeqlens = kForwardCuSeqlensK,
                          kAppendBlockTable = kForwardBlockTable, kAppendCacheSeqlens = kForwardCacheSeqlens;

// One cache write. Values for a layout the kernel was not generated for stay
// at their defaults.
struct CacheAppendCall {
  uint64_t batch = 0, heads_kv = 0;
  uint64_t new_rows = 0;     // the most new rows of a sequence (dense new rows: every sequence's)
  uint64_t total_new = 0;    // packed new rows (varlen kernels): rows of k_new and v_new
  Strides3 k_new, v_new;     // elements; packed: {0, head, row}
  Strides3 k_cache, v_cache; // storage units; paged: {page, head, slot}, dense: {batch, head, row}
  uint64_t cache_rows = 0;   // dense cache: rows per sequence
  uint64_t page_size = 0, num_pages = 0, max_pages = 0;  // paged cache
  double k_scale = 1, v_scale = 1;  // fp8_e4m3 caches
};

// The strides of contiguous new rows ((B, Hkv, S, D) dense, (T, Hkv, D)
// packed) and caches ((B, Hkv, cache_rows, D) dense, (num_pages, page_size,
// Hkv, D) paged) for `kernel`, into `call` (its sizes must be set).
void contiguous_append_strides(const ForwardKernelInfo& kernel, CacheAppendCall& call);

// The launch of one write. Throws DispatchError naming what is wrong with
// the call's sizes (the data is checked by check_cache_append).
DispatchPlan plan_cache_append(const ForwardKernelInfo& kernel, const CacheAppendCall& call);

// Checks a write's data as the host holds it, before anything runs: packed
// offsets (B + 1, from 0, non-decreasing, ending at total_new, no sequence
// over new_rows), and that every new row lands inside its sequence: below
// the dense cache's rows, or in a page of the block table row that is a page
// of the cache. Throws DispatchError naming the first offending entry;
// nothing is written then. `cu_seqlens` is empty for dense new rows,
// `block_table` for a dense cache.
void check_cache_append(const ForwardKernelInfo& kernel, const CacheAppendCall& call,
                        std::span<const int32_t> cu_seqlens, std::span<const int32_t> block_table,
                        std::span<const int32_t> cache_seqlens);

}  // namespace mfagen
