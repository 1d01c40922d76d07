// Philox4x32-10 against the known-answer vectors published with Random123
// (kat_vectors: philox4x32 10 rounds), and the dropout decision built on it.
#include "dropout.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mfagen::reference {
namespace {

using Words = std::array<uint32_t, 4>;

TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Dropout, ThresholdIsFloorOfPTimes2To32) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);
  EXPECT_EQ(dropout_threshold(0.5), 0x80000000u);
  EXPECT_EQ(dropout_threshold(0.1), 429496729u);
}

TEST(Dropout, KeepRateIsWithinABinomialIntervalAndMasksDependOnEveryCounterWord) {
  const DropoutOptions d{0.3, 0x0123456789abcdefull, 7};
  uint64_t kept = 0, n = 0;
  for (uint64_t b = 0; b < 2; ++b)
    for (uint64_t h = 0; h < 4; ++h)
      for (uint64_t i = 0; i < 50; ++i)
        for (uint64_t j = 0; j < 100; ++j, ++n) kept += dropout_keeps(d, 4, b, h, i, j);
  const double rate = double(kept) / double(n), sigma = std::sqrt(0.7 * 0.3 / double(n));
  EXPECT_NEAR(rate, 0.7, 5 * sigma);
  // Another offset, seed or head gives another mask.
  uint64_t differ_offset = 0, differ_seed = 0, differ_head = 0;
  for (uint64_t j = 0; j < 1000; ++j) {
    differ_offset += dropout_keeps(d, 4, 0, 0, 0, j) != dropout_keeps({0.3, d.seed, 8}, 4, 0, 0, 0, j);
    differ_seed += dropout_keeps(d, 4, 0, 0, 0, j) != dropout_keeps({0.3, d.seed ^ (1ull << 40), 7}, 4, 0, 0, 0, j);
    differ_head += dropout_keeps(d, 4, 0, 0, 0, j) != dropout_keeps(d, 4, 0, 1, 0, j);
  }
  for (uint64_t differ : {differ_offset, differ_seed, differ_head}) {
    EXPECT_GT(differ, 300u);  // about 2 * 0.3 * 0.7 = 42% of the elements
    EXPECT_LT(differ, 540u);
  }
}

}  // namespace
}  // namespace mfagen::reference
