// What a cache write (spec kind cache_append, DESIGN.md section 13) leaves in
// a KV cache, for the reference: each new row of each sequence stored at
// position cache_seqlens[b] + t of that sequence, in the dtype's encoding or
// quantized by quantize_rows_float32, every other byte as it was. Written
// from the layouts' definitions, independent of any kernel code.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "dtype_rounding.h"
#include "quantized_kv.h"

namespace mfagen::reference {

struct CacheWrite {
  ElementType type = ElementType::float16;  // of the new rows (and of an unquantized cache)
  std::optional<KvQuant> quant;             // a quantized cache's format
  float scale = 1;                          // fp8: the tensor's scale
  uint64_t heads_kv = 1, columns = 0;       // a row's values (D or Dv)
  std::vector<uint32_t> new_rows;           // per sequence
  std::vector<int32_t> cache_seqlens;       // per sequence, before the write
  // Paged (page_size > 0): (num_pages, page_size, Hkv, row) with the block
  // table (B, max_pages); dense: (B, Hkv, cache_rows, row). Contiguous.
  uint64_t page_size = 0, max_pages = 0, cache_rows = 0;
  std::vector<int32_t> block_table;
};

// The bytes one row of `values` takes in the cache.
std::vector<uint8_t> stored_row(const CacheWrite& w, const std::vector<float>& values);

// New rows (sequence by sequence, (Hkv, columns) each) as a cache_append
// kernel reads them, encoded in `type`: packed (T, Hkv, columns) as given, or
// with `dense_rows` > 0 dense (B, Hkv, dense_rows, columns), zero past a
// sequence's rows.
std::vector<uint8_t> new_rows_bytes(const CacheWrite& w, const std::vector<float>& rows, uint64_t dense_rows);

// `cache` after the write of `rows`: the new rows of every sequence in turn
// (sequence 0's rows first), each (Hkv, columns) row-major, float32 values
// exact in `type`. Throws std::invalid_argument for a row outside the cache.
std::vector<uint8_t> written_cache(const CacheWrite& w, std::vector<uint8_t> cache, const std::vector<float>& rows);

}  // namespace mfagen::reference
