// Seeded inputs: reproducible, rounded to the type, normally distributed; and
// the buffer conversions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "random_inputs.h"

namespace mfagen::reference {
namespace {

TEST(RandomTensor, ReproducibleAndSeeded) {
  EXPECT_EQ(random_tensor(1001, 7, ElementType::float32), random_tensor(1001, 7, ElementType::float32));
  EXPECT_NE(random_tensor(16, 7, ElementType::float32), random_tensor(16, 8, ElementType::float32));
  // A prefix of a longer tensor is the shorter tensor (odd counts included).
  std::vector<double> long_one = random_tensor(10, 3, ElementType::float16);
  std::vector<double> short_one = random_tensor(7, 3, ElementType::float16);
  EXPECT_TRUE(std::equal(short_one.begin(), short_one.end(), long_one.begin()));
  EXPECT_TRUE(random_tensor(0, 3, ElementType::float16).empty());
}

TEST(RandomTensor, PinnedValues) {
  // mt19937_64 is fully specified, and rounding to half hides last-ulp
  // differences between libm's log/cos/sin (short of a value landing on a tie):
  // these bits should be the same everywhere.
  // (Cross-checked with a Python Box-Muller over the same engine outputs.)
  std::vector<uint16_t> bits = to_bits(random_tensor(6, 42, ElementType::float16), ElementType::float16);
  EXPECT_EQ(bits, std::vector<uint16_t>({0xbc4f, 0xbd25, 0x3c61, 0x3d0c, 0x3f2e, 0x3cd1}));
}

TEST(RandomTensor, RoundedToTheTypeWithTheRightMoments) {
  for (ElementType type : {ElementType::float16, ElementType::bfloat16, ElementType::float32}) {
    std::vector<double> x = random_tensor(200000, 5, type, 2.0);
    double sum = 0, sum_squares = 0;
    for (double value : x) {
      ASSERT_EQ(static_cast<double>(round_to(type, value)), value);
      sum += value;
      sum_squares += value * value;
    }
    double mean = sum / x.size();
    double stddev = std::sqrt(sum_squares / x.size() - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.02) << to_string(type);  // 2 / sqrt(200000) ~ 0.0045 standard error
    EXPECT_NEAR(stddev, 2.0, 0.02) << to_string(type);
  }
}

TEST(Conversions, ToFloatAndToBits) {
  std::vector<double> h = random_tensor(1000, 9, ElementType::float16);
  std::vector<float> hf = to_float(h);
  std::vector<uint16_t> hb = to_bits(h, ElementType::float16);
  for (size_t n = 0; n < h.size(); ++n) {
    EXPECT_EQ(static_cast<double>(hf[n]), h[n]);
    EXPECT_EQ(static_cast<double>(half_from_bits(hb[n])), h[n]);
  }
  std::vector<double> b = random_tensor(1000, 9, ElementType::bfloat16);
  std::vector<uint16_t> bb = to_bits(b, ElementType::bfloat16);
  for (size_t n = 0; n < b.size(); ++n) EXPECT_EQ(static_cast<double>(bfloat_from_bits(bb[n])), b[n]);
  // Values not yet rounded are rounded once, from the double.
  EXPECT_EQ(to_bits({1.0 + 0x1p-11 + 0x1p-30}, ElementType::float16), std::vector<uint16_t>({0x3c01}));
  EXPECT_THROW(to_bits(h, ElementType::float32), std::invalid_argument);
}

}  // namespace
}  // namespace mfagen::reference
