// Per-sequence lengths of a profiled call: a serving step's batch, each
// sequence with its own number of new queries and its own keys (a paged
// cache's cache_seqlens, a varlen call's cu_seqlens_k differences), as
// `mfagen profile --seqlens-q ... --seqlens-k ...` states them (docs/profile.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::profile {

struct SequenceLengths {
  std::vector<uint64_t> q;  // queries of each sequence (its last rows: bottom-right)
  std::vector<uint64_t> k;  // keys of each sequence (on a paged cache: cache_seqlens, the new rows included)
  bool empty() const { return q.empty() && k.empty(); }
};

// Parses one list of lengths. `text` is a .npy file (a 1-d int32 or int64
// array; the argument ends in ".npy") or comma-separated items, each
//   N          one sequence of N
//   NxC        C sequences of N each
//   A..BxC     C sequences evenly spaced from A to B, both included
//              (A + round(i (B - A) / (C - 1)), i = 0 .. C-1)
// e.g. "2048,1x63" or "2048,4096..32768x63". Lengths may be 0 (an empty
// sequence) up to 2^31 - 1. Throws session::CallError naming `option` and
// what was expected; io::NpyError for an unreadable file.
std::vector<uint64_t> parse_lengths(std::string_view text, std::string_view option);

// A call's lengths from either list or both: a list not given (empty) is
// `uniform` for every sequence of the other. Throws session::CallError when
// the lists' counts differ, no sequence has a query or none has a key.
SequenceLengths complete_lengths(std::vector<uint64_t> q, std::vector<uint64_t> k, uint64_t uniform_q,
                                 uint64_t uniform_k);

// The lengths in words, runs of equal values compressed ("2048, 1 x63"); long
// irregular lists as their count, range and total ("63 sequences, 4096..32768, total 1.16M").
std::string lengths_text(const std::vector<uint64_t>& lengths);

}  // namespace mfagen::profile
