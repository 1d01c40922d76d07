// Dropout for the reference (DESIGN.md section 13): Philox4x32-10, written
// from its definition (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011; the constants of Random123), keyed by the seed and
// counting over (key j, query i, b * Hq + h, offset), so that a mask is a pure
// function of the element: independent of tiles, threads, splits and chips.
#pragma once

#include <array>
#include <cstdint>

namespace mfagen::reference {

// The 4 output words of Philox4x32 with 10 rounds.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

struct DropoutOptions {
  double p = 0;         // drop probability, in [0, 1)
  uint64_t seed = 0;    // the key: (low 32 bits, high 32 bits)
  uint32_t offset = 0;  // the counter's last word (a step of training, say)
};

// floor(p * 2^32): an element is kept iff the first Philox word is at least this.
uint32_t dropout_threshold(double p);

// Whether element (b, h, i, j) of a problem with `heads_q` query heads is kept.
bool dropout_keeps(const DropoutOptions& dropout, uint64_t heads_q, uint64_t b, uint64_t h, uint64_t i, uint64_t j);

}  // namespace mfagen::reference
