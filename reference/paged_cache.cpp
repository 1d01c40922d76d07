#include "paged_cache.h"

#include <stdexcept>
#include <string>

namespace mfagen::reference {

std::vector<double> gather_sequence(const std::vector<double>& pages, const PagedCache& cache, uint64_t columns,
                                    uint64_t b) {
  if (b >= cache.cache_seqlens.size()) throw std::invalid_argument("paged cache: no sequence " + std::to_string(b));
  const int32_t keys = cache.cache_seqlens[b];
  if (keys < 0 || uint64_t(keys) > cache.max_pages * cache.page_size)
    throw std::invalid_argument("paged cache: sequence " + std::to_string(b) + " has " + std::to_string(keys) +
                                " keys, more than its block table row holds");
  const uint64_t sk = uint64_t(keys), h_kv = cache.heads_kv;
  std::vector<double> dense(h_kv * sk * columns);
  for (uint64_t j = 0; j < sk; ++j) {
    const int32_t page = cache.block_table[b * cache.max_pages + j / cache.page_size];
    if (page < 0 || uint64_t(page) >= cache.num_pages)
      throw std::invalid_argument("paged cache: block table entry " + std::to_string(page) + " is not a page");
    const uint64_t slot = j % cache.page_size;
    for (uint64_t h = 0; h < h_kv; ++h)
      for (uint64_t c = 0; c < columns; ++c)
        dense[(h * sk + j) * columns + c] = pages[((uint64_t(page) * cache.page_size + slot) * h_kv + h) * columns + c];
  }
  return dense;
}

}  // namespace mfagen::reference
