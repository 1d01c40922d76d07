#include "session/call_layout.h"

#include <fmt/format.h>

#include "io/npy.h"
#include "session/call_error.h"

namespace mfagen::session {
namespace {

void require_same(const TensorShape& a, size_t da, const TensorShape& b, size_t db, const char* meaning) {
  if (a.shape.at(da) != b.shape.at(db))
    throw CallError(fmt::format("{} has shape {} but {} has shape {}: {} must match", a.what,
                                io::shape_repr(a.shape), b.what, io::shape_repr(b.shape), meaning));
}

void require_rank(const TensorShape& t, size_t rank, const char* expected) {
  if (t.shape.size() != rank)
    throw CallError(fmt::format("{}: expected a {}, found shape {}", t.what, expected, io::shape_repr(t.shape)));
}

}  // namespace

void check_ranks(TensorLayout layout, const TensorShape& q, const TensorShape& k, const TensorShape& v) {
  if (layout == TensorLayout::packed_paged) {
    require_rank(q, 3, "3-d (total rows, heads, dim) packed array (--cu-seqlens-q is given)");
    require_rank(k, 4, "4-d (num_pages, page_size, heads, dim) paged cache");
    require_rank(v, 4, "4-d (num_pages, page_size, heads, dim) paged cache");
    return;
  }
  if (layout == TensorLayout::packed) {
    for (const TensorShape* t : {&q, &k, &v})
      require_rank(*t, 3, "3-d (total rows, heads, dim) packed array (--cu-seqlens-q/k are given)");
    return;
  }
  require_rank(q, 4, "4-d (batch, heads, seq, dim) array");
  const char* kv = layout == TensorLayout::paged ? "4-d (num_pages, page_size, heads, dim) paged cache"
                                                 : "4-d (batch, heads, seq, dim) array";
  require_rank(k, 4, kv);
  require_rank(v, 4, kv);
}

void CallLayout::apply_to(ForwardCall& call) const {
  call.shape = shape;
  call.strides = strides;
  call.total_q = total_q;
  call.total_k = total_k;
  call.page_size = page_size;
  call.num_pages = num_pages;
  call.max_pages = max_pages;
}

CallLayout call_layout(TensorLayout layout, const TensorShape& q, const TensorShape& k, const TensorShape& v,
                       const SequenceSizes& sizes, KvFormat kv) {
  check_ranks(layout, q, k, v);
  const bool packed = packed_queries(layout), paged = paged_keys(layout);
  const size_t dim = packed ? 2 : 3;           // the head dim's axis of q
  const size_t kv_dim = paged ? 3 : dim;       // of k and v
  const size_t kv_heads_axis = paged ? 2 : 1;  // of k and v
  if (paged) {
    require_same(k, 0, v, 0, "the page counts");
    require_same(k, 1, v, 1, "the page sizes");
  } else if (!packed) {
    require_same(q, 0, k, 0, "the batch sizes");
    require_same(k, 0, v, 0, "the batch sizes");
  }
  require_same(k, kv_heads_axis, v, kv_heads_axis, "the kv head counts");
  if (!paged) require_same(k, dim - 1, v, dim - 1, packed ? "the packed key rows" : "the key sequence lengths");
  require_same(q, dim, k, kv_dim, "head_dim (the last dimension of q and k)");
  const uint64_t heads_q = q.shape[1], heads_kv = k.shape[kv_heads_axis];
  if (heads_q % heads_kv != 0)
    throw CallError(fmt::format("{} has {} heads and {} has {}: the q heads must be a multiple of the kv heads",
                                q.what, heads_q, k.what, heads_kv));

  CallLayout c;
  c.layout = layout;
  c.head_dim = q.shape[dim];
  c.head_dim_v = v.shape[kv_dim];
  const uint32_t d = uint32_t(c.head_dim), dv = uint32_t(c.head_dim_v);
  if (packed && paged) {
    c.total_q = q.shape[0];
    c.shape = {sizes.batch, heads_q, heads_kv, sizes.longest_q, sizes.longest_k};
    c.page_size = k.shape[1];
    c.num_pages = k.shape[0];
    c.max_pages = sizes.max_pages;
    c.strides = packed_paged(c.shape, c.total_q, c.page_size, d, dv, kv);
    c.out_shape = {c.total_q, heads_q, c.head_dim_v};
    c.lse_shape = {heads_q, c.total_q};
    return c;
  }
  if (packed) {
    c.total_q = q.shape[0];
    c.total_k = k.shape[0];
    c.shape = {sizes.batch, heads_q, heads_kv, sizes.longest_q, sizes.longest_k};
    c.strides = packed_varlen(c.shape, c.total_q, d, dv, kv);
    c.out_shape = {c.total_q, heads_q, c.head_dim_v};
    c.lse_shape = {heads_q, c.total_q};
    return c;
  }
  c.shape = {q.shape[0], heads_q, heads_kv, q.shape[2], paged ? sizes.longest_k : k.shape[2]};
  c.strides = contiguous_bhsd(c.shape, d, dv, kv);
  if (paged) {
    c.page_size = k.shape[1];
    c.num_pages = k.shape[0];
    c.max_pages = sizes.max_pages;
    c.strides = paged_kv(c.shape, c.page_size, d, dv, kv);
  }
  c.out_shape = {c.shape.batch, heads_q, c.shape.seq_q, c.head_dim_v};
  c.lse_shape = {c.shape.batch, heads_q, c.shape.seq_q};
  return c;
}

}  // namespace mfagen::session
