// How a call's q, k and v tensors are laid out (DESIGN.md sections 10 and
// 13), and what the runtime needs from their shapes: dense (B, H, S, D)
// tensors, packed sequences (T, H, D) with cu_seqlens, a paged KV cache
// (num_pages, page_size, Hkv, D) with a block table, or packed queries on a
// paged cache (a serving step: cu_seqlens_q, the block table and lengths). `mfagen run` and future
// bindings give the tensors' shapes (and what the boundaries or the block
// table say) and get the call's shape, strides and output shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mfagen/forward_dispatch.h"

namespace mfagen::session {

enum class TensorLayout { dense, packed, paged, packed_paged };

// q (and out) are packed rows (T, H, D) with cu_seqlens_q.
inline bool packed_queries(TensorLayout l) { return l == TensorLayout::packed || l == TensorLayout::packed_paged; }
// k and v are a paged cache (num_pages, page_size, Hkv, D) with a block table.
inline bool paged_keys(TensorLayout l) { return l == TensorLayout::paged || l == TensorLayout::packed_paged; }

// One input's shape and how errors name it ("--q q.npy").
struct TensorShape {
  std::string what;
  std::vector<uint64_t> shape;
};

// What packed sequences and paged caches add to the tensors' shapes.
struct SequenceSizes {
  uint64_t batch = 0;                     // packed: the number of sequences (dense q on a paged cache: from q)
  uint64_t longest_q = 0, longest_k = 0;  // packed: the longest sequences; paged: longest_k, the longest cache
  uint64_t max_pages = 0;                 // paged: entries per block table row
};

struct CallLayout {
  TensorLayout layout = TensorLayout::dense;
  AttentionShape shape;                     // seq_q, seq_k: the longest sequences for packed and paged calls
  ForwardStrides strides;                   // contiguous in the layout
  uint64_t total_q = 0, total_k = 0;        // packed: rows of q/out and k/v (total_k 0 on a paged cache)
  uint64_t page_size = 0, num_pages = 0, max_pages = 0;
  uint64_t head_dim = 0, head_dim_v = 0;
  std::vector<uint64_t> out_shape, lse_shape;  // dense (B, Hq, Sq, Dv), (B, Hq, Sq); packed (Tq, Hq, Dv), (Hq, Tq)

  // Writes the call's shape, strides, packed totals and page facts.
  void apply_to(ForwardCall& call) const;
};

// Checks that q, k and v have the dimensions of the layout (q is 4-d but
// for packed calls, k and v 4-d caches for paged ones); CallError otherwise.
// call_layout() checks it too; callers that read the shapes before (the
// packed rows of q and k) call it first.
void check_ranks(TensorLayout layout, const TensorShape& q, const TensorShape& k, const TensorShape& v);

// Checks that the axes of q, k and v agree (batch, heads, rows, head dims;
// Hq a multiple of Hkv) and derives the call's facts; quantized k and v
// (`kv`) give their shapes in values and get strides in storage units.
// Throws CallError naming both tensors and what must match.
CallLayout call_layout(TensorLayout layout, const TensorShape& q, const TensorShape& k, const TensorShape& v,
                       const SequenceSizes& sizes, KvFormat kv = KvFormat::elements);

}  // namespace mfagen::session
