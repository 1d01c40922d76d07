// Paged KV caches for the reference (DESIGN.md section 13): keys and values
// in pages (num_pages, page_size, Hkv, C) addressed through a block table.
// The reference gathers a sequence's keys into a dense tensor and solves the
// dense problem, so paging adds no math to it.
#pragma once

#include <cstdint>
#include <vector>

namespace mfagen::reference {

struct PagedCache {
  uint64_t page_size = 16, num_pages = 0, max_pages = 0, heads_kv = 1;
  std::vector<int32_t> block_table;    // (B, max_pages): page of each block of page_size keys
  std::vector<int32_t> cache_seqlens;  // (B,): keys of each sequence
};

// Keys 0 .. cache_seqlens[b] - 1 of sequence b, gathered from `pages`
// (num_pages, page_size, Hkv, columns) as a dense (1, Hkv, Sk_b, columns)
// tensor. Throws std::invalid_argument for a page index outside the pages or
// a sequence longer than its block table row.
std::vector<double> gather_sequence(const std::vector<double>& pages, const PagedCache& cache, uint64_t columns,
                                    uint64_t b);

}  // namespace mfagen::reference
