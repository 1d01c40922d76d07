// The block table and cache lengths of a call on a paged KV cache (DESIGN.md
// section 13), read from .npy files and checked against the cache, as
// `mfagen run` and future bindings take them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mfagen::session {

struct PagedCacheInputs {
  std::vector<int32_t> block_table;    // (batch, max_pages)
  std::vector<int32_t> cache_seqlens;  // (batch,)
  uint64_t max_pages = 0;
  uint64_t longest = 1;                // the longest cache length (at least 1: the grid's size)
};

// block_table <i4 (batch, max_pages), cache_seqlens <i4 (batch,): every
// length within its block table row, every page a sequence uses below
// num_pages. Throws CallError naming the option, the file and the entry.
PagedCacheInputs read_paged_cache(const std::string& block_table_file, const std::string& cache_seqlens_file,
                                  uint64_t batch, uint64_t num_pages, uint64_t page_size);

}  // namespace mfagen::session
