#include "cache_write.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace mfagen::reference {

std::vector<uint8_t> stored_row(const CacheWrite& w, const std::vector<float>& values) {
  if (w.quant) return quantize_rows_float32(*w.quant, values, 1, values.size(), w.scale);
  std::vector<uint8_t> bytes(values.size() * (w.type == ElementType::float32 ? 4 : 2));
  for (size_t i = 0; i < values.size(); ++i) {
    if (w.type == ElementType::float32) {
      std::memcpy(&bytes[4 * i], &values[i], 4);
      continue;
    }
    const uint16_t bits = w.type == ElementType::float16 ? half_bits(values[i]) : bfloat_bits(values[i]);
    bytes[2 * i] = uint8_t(bits & 0xFF);  // little-endian, as Apple GPUs store it
    bytes[2 * i + 1] = uint8_t(bits >> 8);
  }
  return bytes;
}

std::vector<uint8_t> new_rows_bytes(const CacheWrite& w, const std::vector<float>& rows, uint64_t dense_rows) {
  CacheWrite elements = w;  // new rows come in the dtype, whatever the cache stores
  elements.quant.reset();
  if (dense_rows == 0) return stored_row(elements, rows);
  std::vector<float> dense(w.new_rows.size() * w.heads_kv * dense_rows * w.columns, 0.0f);
  uint64_t source = 0;
  for (size_t b = 0; b < w.new_rows.size(); ++b)
    for (uint64_t t = 0; t < w.new_rows[b]; ++t)
      for (uint64_t h = 0; h < w.heads_kv; ++h, ++source)
        std::copy_n(rows.begin() + int64_t(source * w.columns), w.columns,
                    dense.begin() + int64_t(((b * w.heads_kv + h) * dense_rows + t) * w.columns));
  return stored_row(elements, dense);
}

std::vector<uint8_t> written_cache(const CacheWrite& w, std::vector<uint8_t> cache, const std::vector<float>& rows) {
  const uint64_t row_bytes = stored_row(w, std::vector<float>(w.columns)).size();
  uint64_t source = 0;  // the next new row
  for (size_t b = 0; b < w.new_rows.size(); ++b)
    for (uint64_t t = 0; t < w.new_rows[b]; ++t)
      for (uint64_t h = 0; h < w.heads_kv; ++h, ++source) {
        const uint64_t position = uint64_t(w.cache_seqlens[b]) + t;
        uint64_t slot;  // the cache row (of Hkv x row_bytes) the position lives in
        if (w.page_size) {
          const int32_t page = w.block_table.at(b * w.max_pages + position / w.page_size);
          slot = uint64_t(page) * w.page_size + position % w.page_size;
          slot = slot * w.heads_kv + h;
        } else {
          slot = (b * w.heads_kv + h) * w.cache_rows + position;
        }
        if ((slot + 1) * row_bytes > cache.size())
          throw std::invalid_argument("written_cache: sequence " + std::to_string(b) + " row " + std::to_string(t) +
                                      " lands outside the cache");
        const std::vector<float> values(rows.begin() + int64_t(source * w.columns),
                                        rows.begin() + int64_t((source + 1) * w.columns));
        const std::vector<uint8_t> stored = stored_row(w, values);
        std::memcpy(cache.data() + slot * row_bytes, stored.data(), row_bytes);
      }
  return cache;
}

}  // namespace mfagen::reference
