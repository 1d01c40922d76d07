#include "dropout.h"

#include <cmath>

namespace mfagen::reference {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    const uint64_t p0 = uint64_t(kM0) * c[0], p1 = uint64_t(kM1) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ key[1], uint32_t(p0)};
  }
  return c;
}

uint32_t dropout_threshold(double p) { return uint32_t(std::floor(p * 4294967296.0)); }

bool dropout_keeps(const DropoutOptions& d, uint64_t heads_q, uint64_t b, uint64_t h, uint64_t i, uint64_t j) {
  const std::array<uint32_t, 4> counter = {uint32_t(j), uint32_t(i), uint32_t(b * heads_q + h), d.offset};
  const std::array<uint32_t, 2> key = {uint32_t(d.seed), uint32_t(d.seed >> 32)};
  return philox4x32_10(counter, key)[0] >= dropout_threshold(d.p);
}

}  // namespace mfagen::reference
