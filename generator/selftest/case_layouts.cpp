#include "selftest/case_layouts.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "plan/dispatch_info.h"

namespace mfagen::selftest {
namespace {

bool packed(const SelftestCase& c) { return c.kernel.layout == spec::Layout::varlen; }
bool paged(const SelftestCase& c) { return c.kernel.kv_cache == spec::KvCache::paged; }

// Rows of `row_bytes` from dense (B, H, S) order to packed (B * S, H) order, or back.
std::vector<std::byte> reorder(const std::vector<std::byte>& from, uint64_t batch, uint64_t heads, uint64_t rows,
                               uint64_t row_bytes, bool to_packed) {
  std::vector<std::byte> to(from.size());
  for (uint64_t b = 0; b < batch; ++b)
    for (uint64_t h = 0; h < heads; ++h)
      for (uint64_t i = 0; i < rows; ++i) {
        const uint64_t dense = (b * heads + h) * rows + i, packed_row = (b * rows + i) * heads + h;
        const uint64_t src = to_packed ? dense : packed_row, dst = to_packed ? packed_row : dense;
        std::memcpy(to.data() + dst * row_bytes, from.data() + src * row_bytes, row_bytes);
      }
  return to;
}

}  // namespace

bool serving_layout(const SelftestCase& c) { return packed(c) || paged(c); }

LaidOutInputs lay_out(const SelftestCase& c, const CaseInputs& in, ForwardCall call) {
  const AttentionShape& s = c.shape;
  const KvFormat kv = plan::kv_format(c.kernel);
  const uint32_t d = c.kernel.head_dim, dv = c.kernel.head_dim_v;
  const uint64_t elem = spec::dtype_bytes(c.kernel.dtype), unit = kv_unit_bytes(kv, uint32_t(elem));
  const uint64_t k_row = kv_row_units(kv, d) * unit, v_row = kv_row_units(kv, dv) * unit;
  LaidOutInputs r;
  r.q = packed(c) ? reorder(in.q, s.batch, s.heads_q, s.seq_q, d * elem, true) : in.q;
  r.k = in.k;
  r.v = in.v;
  if (packed(c)) {
    call.total_q = s.batch * s.seq_q;
    for (uint64_t b = 0; b <= s.batch; ++b) r.cu_seqlens_q.push_back(int32_t(b * s.seq_q));
  }
  if (paged(c)) {
    // Each sequence's keys in pages of kSelftestPageSize, the pages in shuffled order, two spare.
    const uint64_t max_pages = (s.seq_k + kSelftestPageSize - 1) / kSelftestPageSize;
    call.page_size = kSelftestPageSize;
    call.max_pages = max_pages;
    call.num_pages = s.batch * max_pages + 2;
    std::vector<int32_t> pages(call.num_pages);
    std::iota(pages.begin(), pages.end(), 0);
    std::shuffle(pages.begin(), pages.end(), std::mt19937(uint32_t(c.seed)));
    r.block_table.assign(pages.begin(), pages.begin() + int64_t(s.batch * max_pages));
    r.cache_seqlens.assign(s.batch, int32_t(s.seq_k));
    for (auto [cache, row_bytes] : {std::pair{&r.k, k_row}, std::pair{&r.v, v_row}}) {
      const std::vector<std::byte> dense = *cache;
      cache->assign(call.num_pages * kSelftestPageSize * s.heads_kv * row_bytes, std::byte{0});
      for (uint64_t b = 0; b < s.batch; ++b)
        for (uint64_t h = 0; h < s.heads_kv; ++h)
          for (uint64_t j = 0; j < s.seq_k; ++j) {
            const uint64_t page = uint64_t(r.block_table[b * max_pages + j / kSelftestPageSize]);
            const uint64_t slot = (page * kSelftestPageSize + j % kSelftestPageSize) * s.heads_kv + h;
            std::memcpy(cache->data() + slot * row_bytes, dense.data() + ((b * s.heads_kv + h) * s.seq_k + j) * row_bytes,
                        row_bytes);
          }
    }
    call.strides = packed(c) ? packed_paged(s, call.total_q, kSelftestPageSize, d, dv, kv)
                             : paged_kv(s, kSelftestPageSize, d, dv, kv);
  } else if (packed(c)) {
    call.total_k = s.batch * s.seq_k;
    for (uint64_t b = 0; b <= s.batch; ++b) r.cu_seqlens_k.push_back(int32_t(b * s.seq_k));
    r.k = reorder(in.k, s.batch, s.heads_kv, s.seq_k, k_row, true);
    r.v = reorder(in.v, s.batch, s.heads_kv, s.seq_k, v_row, true);
    call.strides = packed_varlen(s, call.total_q, d, dv, kv);
  }
  r.call = call;
  return r;
}

std::vector<std::byte> dense_out(const SelftestCase& c, const std::vector<std::byte>& out) {
  if (!packed(c)) return out;
  const AttentionShape& s = c.shape;
  return reorder(out, s.batch, s.heads_q, s.seq_q, c.kernel.head_dim_v * spec::dtype_bytes(c.kernel.dtype), false);
}

std::vector<float> dense_lse(const SelftestCase& c, const std::vector<float>& lse) {
  if (!packed(c)) return lse;
  const AttentionShape& s = c.shape;
  const uint64_t total = s.batch * s.seq_q;
  std::vector<float> dense(lse.size());
  for (uint64_t b = 0; b < s.batch; ++b)  // packed lse is (Hq, total_q)
    for (uint64_t h = 0; h < s.heads_q; ++h)
      for (uint64_t i = 0; i < s.seq_q; ++i) dense[(b * s.heads_q + h) * s.seq_q + i] = lse[h * total + b * s.seq_q + i];
  return dense;
}

}  // namespace mfagen::selftest
