// Variable-length batches for the reference (DESIGN.md section 13): a packed
// batch is solved one sequence at a time, each sequence a dense problem of
// its own (batch 1), so the packed layout adds no math to the reference.
#pragma once

#include <cstdint>
#include <vector>

#include "attention_problem.h"

namespace mfagen::reference {

struct PackedBatch {
  // Heads, head dims, causal mode, scale, window, softcap, ALiBi slopes (Hq,
  // or B x Hq), sinks; its batch, lengths and tensors are not read.
  AttentionProblem options;
  std::vector<int32_t> cu_seqlens_q, cu_seqlens_k;  // B + 1 entries each, from 0, non-decreasing
  std::vector<double> q, k, v;                      // (Tq, Hq, D), (Tk, Hkv, D), (Tk, Hkv, Dv)
};

uint64_t sequence_count(const PackedBatch& batch);

// Sequence b as the dense problem the reference solves: q (1, Hq, Sq_b, D), ...
AttentionProblem sequence_problem(const PackedBatch& batch, uint64_t b);

// The options of entry b of a batch of `batches` entries, solved as a problem
// of its own: ALiBi slopes given per entry (batches x Hq) become entry b's Hq,
// and score_mod / mask_mod still see b (not the 0 of the one-entry problem).
AttentionProblem entry_options(const AttentionProblem& options, uint64_t batches, uint64_t b);

// Rows [start, start + length) of a packed (T, heads, columns) tensor as a
// dense (1, heads, length, columns) one.
std::vector<double> unpack_rows(const std::vector<double>& packed, uint64_t heads, uint64_t columns, uint64_t start,
                                uint64_t length);

}  // namespace mfagen::reference
