// The sequence boundaries of a varlen call (DESIGN.md section 13):
// cu_seqlens_q and cu_seqlens_k read from .npy files and checked against the
// packed tensors, as `mfagen run` and future bindings take them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mfagen::session {

struct PackedSequences {
  std::vector<int32_t> cu_seqlens_q, cu_seqlens_k;  // B + 1 entries each (cu_seqlens_k empty on a paged cache)
  uint64_t batch = 0;                               // B, the number of sequences
  uint64_t longest_q = 0, longest_k = 0;            // the longest sequence's rows (at least 1: the grid's size)
};

// <i4 (or <i8 within int32) arrays of B + 1 entries from 0, never
// decreasing, ending at total_q (total_k) rows. Throws CallError naming the
// option, the file and the first offending entry.
PackedSequences read_packed_sequences(const std::string& cu_seqlens_q_file, const std::string& cu_seqlens_k_file,
                                      uint64_t total_q, uint64_t total_k);

// Packed queries on a paged cache: cu_seqlens_q only (the keys are each
// sequence's cache), checked the same way; cu_seqlens_k stays empty.
PackedSequences read_packed_queries(const std::string& cu_seqlens_q_file, uint64_t total_q);

}  // namespace mfagen::session
