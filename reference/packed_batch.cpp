#include "packed_batch.h"

#include <stdexcept>
#include <string>

namespace mfagen::reference {

uint64_t sequence_count(const PackedBatch& batch) {
  if (batch.cu_seqlens_q.size() != batch.cu_seqlens_k.size() || batch.cu_seqlens_q.empty())
    throw std::invalid_argument("packed batch: cu_seqlens_q and cu_seqlens_k need the same B + 1 entries");
  return batch.cu_seqlens_q.size() - 1;
}

std::vector<double> unpack_rows(const std::vector<double>& packed, uint64_t heads, uint64_t columns, uint64_t start,
                                uint64_t length) {
  if ((start + length) * heads * columns > packed.size())
    throw std::invalid_argument("packed batch: rows " + std::to_string(start) + ".." +
                                std::to_string(start + length) + " are past the packed tensor");
  std::vector<double> dense(heads * length * columns);
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t i = 0; i < length; ++i)
      for (uint64_t c = 0; c < columns; ++c)
        dense[(h * length + i) * columns + c] = packed[((start + i) * heads + h) * columns + c];
  return dense;
}

AttentionProblem sequence_problem(const PackedBatch& batch, uint64_t b) {
  if (b >= sequence_count(batch)) throw std::invalid_argument("packed batch: no sequence " + std::to_string(b));
  const AttentionProblem& o = batch.options;
  AttentionProblem p = entry_options(o, sequence_count(batch), b);
  const int32_t q0 = batch.cu_seqlens_q[b], q1 = batch.cu_seqlens_q[b + 1];
  const int32_t k0 = batch.cu_seqlens_k[b], k1 = batch.cu_seqlens_k[b + 1];
  if (q0 < 0 || q1 < q0 || k0 < 0 || k1 < k0)
    throw std::invalid_argument("packed batch: cu_seqlens of sequence " + std::to_string(b) + " decrease");
  p.batch = 1;
  p.seq_q = uint64_t(q1 - q0);
  p.seq_k = uint64_t(k1 - k0);
  p.q = unpack_rows(batch.q, o.heads_q, o.head_dim, uint64_t(q0), p.seq_q);
  p.k = unpack_rows(batch.k, o.heads_kv, o.head_dim, uint64_t(k0), p.seq_k);
  p.v = unpack_rows(batch.v, o.heads_kv, o.head_dim_v, uint64_t(k0), p.seq_k);
  return p;
}

AttentionProblem entry_options(const AttentionProblem& options, uint64_t batches, uint64_t b) {
  AttentionProblem p = options;
  p.batch = 1;
  if (options.score_mod)
    p.score_mod = [f = options.score_mod, b](double s, uint64_t, uint64_t h, uint64_t i, uint64_t j) {
      return f(s, b, h, i, j);
    };
  if (options.mask_mod)
    p.mask_mod = [f = options.mask_mod, b](uint64_t, uint64_t h, uint64_t i, uint64_t j) { return f(b, h, i, j); };
  if (options.alibi_slopes.size() == batches * options.heads_q && batches != 1)
    p.alibi_slopes.assign(options.alibi_slopes.begin() + b * options.heads_q,
                          options.alibi_slopes.begin() + (b + 1) * options.heads_q);
  return p;
}

}  // namespace mfagen::reference
