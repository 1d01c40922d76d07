// Rounding to float16/bfloat16/float32 against hand-computed cases, and two
// independent derivations (double arithmetic in round_to, float bits in
// half_bits/bfloat_bits) checked against each other; GCC's _Float16, where
// available, as a third opinion for half.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "dtype_rounding.h"

namespace mfagen::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr ElementType f16 = ElementType::float16;
constexpr ElementType bf16 = ElementType::bfloat16;
constexpr ElementType f32 = ElementType::float32;

// Same value and same sign of zero.
void expect_same(float actual, double expected, const char* what) {
  EXPECT_EQ(static_cast<double>(actual), expected) << what;
  EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << what;
}

TEST(RoundTo, HalfTiesToEven) {
  expect_same(round_to(f16, 1.0 + 0x1p-11), 1.0, "1 + 2^-11 is a tie: even mantissa 0");
  expect_same(round_to(f16, 1.0 + 3 * 0x1p-11), 1.0 + 0x1p-9, "1 + 3*2^-11 is a tie: even mantissa 2");
  expect_same(round_to(f16, 1.0 + 0x1p-11 + 0x1p-30), 1.0 + 0x1p-10, "just above the tie rounds up");
  expect_same(round_to(f16, 1.0 + 0x1p-11 - 0x1p-30), 1.0, "just below the tie rounds down");
  expect_same(round_to(f16, -(1.0 + 3 * 0x1p-11)), -(1.0 + 0x1p-9), "negative tie");
  expect_same(round_to(f16, 2048 + 1), 2048, "integers above 2048 step by 2: 2049 ties to 2048");
  expect_same(round_to(f16, 2048 + 3), 2052, "2051 ties to 2052");
  expect_same(round_to(f16, 0.1), 0x1.998p-4, "0.1 -> nearest half 0.0999755859375");
}

TEST(RoundTo, HalfOverflow) {
  expect_same(round_to(f16, 65504), 65504, "largest finite half");
  expect_same(round_to(f16, 65519.99), 65504, "below the tie");
  expect_same(round_to(f16, 65520), kInf, "the tie past 65504 rounds to even = 65536 = overflow");
  expect_same(round_to(f16, -65520), -kInf, "negative overflow");
  expect_same(round_to(f16, 1e10), kInf, "far past the range");
  expect_same(round_to(f16, kInf), kInf, "infinity stays");
  expect_same(round_to(f16, -kInf), -kInf, "-infinity stays");
  EXPECT_TRUE(std::isnan(round_to(f16, std::nan(""))));
}

TEST(RoundTo, HalfSubnormals) {
  expect_same(round_to(f16, 0x1p-24), 0x1p-24, "smallest subnormal");
  expect_same(round_to(f16, 0x1p-25), 0.0, "half of the smallest subnormal ties to 0");
  expect_same(round_to(f16, -0x1p-25), -0.0, "ties to -0 keeping the sign");
  expect_same(round_to(f16, 0x1p-25 + 0x1p-40), 0x1p-24, "just above the tie");
  expect_same(round_to(f16, 1.5 * 0x1p-24), 0x1p-23, "1.5 units ties to 2 units");
  expect_same(round_to(f16, 2.5 * 0x1p-24), 0x1p-23, "2.5 units ties to 2 units");
  expect_same(round_to(f16, 1023 * 0x1p-24), 1023 * 0x1p-24, "largest subnormal");
  expect_same(round_to(f16, 1023.5 * 0x1p-24), 0x1p-14, "rounds up into the smallest normal");
  expect_same(round_to(f16, 0x1p-14), 0x1p-14, "smallest normal");
  expect_same(round_to(f16, 1e-10), 0.0, "underflow");
  expect_same(round_to(f16, -0.0), -0.0, "-0 keeps its sign");
}

TEST(RoundTo, Bfloat) {
  expect_same(round_to(bf16, 1.00390625), 1.0, "1 + 2^-8 is a tie: even mantissa 0");
  expect_same(round_to(bf16, 1.0 + 3 * 0x1p-8), 1.0 + 0x1p-6, "1 + 3*2^-8 ties to even mantissa 2");
  expect_same(round_to(bf16, 1.0 + 0x1p-8 + 0x1p-20), 1.0 + 0x1p-7, "just above the tie");
  expect_same(round_to(bf16, 3.14159265), 3.140625, "pi");
  const double max_bfloat = (2 - 0x1p-7) * 0x1p127;
  expect_same(round_to(bf16, max_bfloat), max_bfloat, "largest finite bfloat");
  expect_same(round_to(bf16, (2 - 0x1p-8) * 0x1p127), kInf, "tie past the largest rounds to overflow");
  expect_same(round_to(bf16, 1e39), kInf, "beyond float's range");
  expect_same(round_to(bf16, 0x1p-133), 0x1p-133, "smallest bfloat subnormal");
  expect_same(round_to(bf16, 0x1p-134), 0.0, "tie to 0");
  expect_same(round_to(bf16, 1.5 * 0x1p-133), 0x1p-132, "tie to 2 units");
  EXPECT_TRUE(std::isnan(round_to(bf16, std::nan(""))));
}

TEST(RoundTo, Float32) {
  expect_same(round_to(f32, 1.0 + 0x1p-24), 1.0, "tie to even");
  expect_same(round_to(f32, 1.0 + 3 * 0x1p-24), 1.0 + 0x1p-22, "tie to even, upwards");
  expect_same(round_to(f32, 1e39), kInf, "overflow");
  expect_same(round_to(f32, 0x1p-149), 0x1p-149, "smallest float subnormal");
}

TEST(Bits, KnownEncodings) {
  EXPECT_EQ(half_bits(1.0f), 0x3c00);
  EXPECT_EQ(half_bits(-2.0f), 0xc000);
  EXPECT_EQ(half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(half_bits(65520.0f), 0x7c00);
  EXPECT_EQ(half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(half_bits(0x1p-24f), 0x0001);
  EXPECT_EQ(half_bits(0x1p-25f), 0x0000);
  EXPECT_EQ(half_bits(0x1.8p-24f), 0x0002);
  EXPECT_EQ(half_bits(0x1p-14f), 0x0400);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(half_bits(1.0f + 3 * 0x1p-11f), 0x3c02);
  uint16_t nan = half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);

  EXPECT_EQ(bfloat_bits(1.0f), 0x3f80);
  EXPECT_EQ(bfloat_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(bfloat_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even, upwards
  EXPECT_EQ(bfloat_bits(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(bfloat_bits(std::numeric_limits<float>::max()), 0x7f80);  // overflow
  EXPECT_EQ(bfloat_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  uint16_t bnan = bfloat_bits(std::bit_cast<float>(0x7f800001u));  // NaN payload only in the dropped bits
  EXPECT_EQ(bnan & 0x7f80, 0x7f80);
  EXPECT_NE(bnan & 0x007f, 0);

  EXPECT_EQ(half_from_bits(0x3c00), 1.0f);
  EXPECT_EQ(half_from_bits(0x0001), 0x1p-24f);
  EXPECT_EQ(half_from_bits(0x3555), 0x1.554p-2f);
  EXPECT_EQ(half_from_bits(0xfbff), -65504.0f);
  EXPECT_EQ(half_from_bits(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_from_bits(0x7e00)));
  EXPECT_EQ(bfloat_from_bits(0x4049), 3.140625f);
  EXPECT_EQ(bfloat_from_bits(0x0001), 0x1p-133f);
}

// Every 16-bit pattern decodes to a value that is its own rounding and encodes back.
TEST(Bits, EveryPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    float h = half_from_bits(bits);
    float bf = bfloat_from_bits(bits);
    if (!std::isnan(h)) {
      ASSERT_EQ(half_bits(h), bits) << std::hex << b;
      ASSERT_EQ(std::bit_cast<uint32_t>(round_to(f16, h)), std::bit_cast<uint32_t>(h)) << std::hex << b;
    }
    if (!std::isnan(bf)) {
      ASSERT_EQ(bfloat_bits(bf), bits) << std::hex << b;
      ASSERT_EQ(std::bit_cast<uint32_t>(round_to(bf16, bf)), std::bit_cast<uint32_t>(bf)) << std::hex << b;
    }
  }
}

// The midpoint between two neighbouring finite values goes to the one with the
// even encoding, in both derivations; a hair off the midpoint goes to the nearer.
TEST(Bits, EveryMidpointTiesToEven) {
  for (uint32_t b = 0; b < 0x7bff; ++b) {  // positive finite halfs, b and b+1 both finite
    double low = half_from_bits(static_cast<uint16_t>(b)), high = half_from_bits(static_cast<uint16_t>(b + 1));
    double mid = (low + high) / 2;  // exact, and exactly a float (12 significant bits)
    uint16_t even = static_cast<uint16_t>((b & 1) ? b + 1 : b);
    ASSERT_EQ(half_bits(static_cast<float>(mid)), even) << std::hex << b;
    ASSERT_EQ(round_to(f16, mid), half_from_bits(even)) << std::hex << b;
    ASSERT_EQ(round_to(f16, -mid), -half_from_bits(even)) << std::hex << b;
    double hair = (high - low) * 0x1p-10;  // mid +- hair still fits a float (22 significant bits)
    ASSERT_EQ(round_to(f16, mid - hair), low) << std::hex << b;
    ASSERT_EQ(round_to(f16, mid + hair), high) << std::hex << b;
    ASSERT_EQ(half_bits(static_cast<float>(mid + hair)), b + 1) << std::hex << b;
  }
  for (uint32_t b = 0; b < 0x7f7f; ++b) {  // positive finite bfloats
    double low = bfloat_from_bits(static_cast<uint16_t>(b)), high = bfloat_from_bits(static_cast<uint16_t>(b + 1));
    double mid = (low + high) / 2;
    uint16_t even = static_cast<uint16_t>((b & 1) ? b + 1 : b);
    ASSERT_EQ(bfloat_bits(static_cast<float>(mid)), even) << std::hex << b;
    ASSERT_EQ(round_to(bf16, mid), bfloat_from_bits(even)) << std::hex << b;
    double hair = (high - low) * 0x1p-12;
    ASSERT_EQ(round_to(bf16, mid - hair), low) << std::hex << b;
    ASSERT_EQ(round_to(bf16, mid + hair), high) << std::hex << b;
  }
}

// round_to (double arithmetic) and the *_bits functions (float bit tricks) agree
// on a million floats spread over every exponent, including NaN and infinity.
TEST(Bits, TwoDerivationsAgreeOnSampledFloats) {
  for (uint64_t f = 0; f <= 0xffffffffull; f += 4093) {
    float x = std::bit_cast<float>(static_cast<uint32_t>(f));
    float by_bits_h = half_from_bits(half_bits(x)), by_bits_b = bfloat_from_bits(bfloat_bits(x));
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(by_bits_h) && std::isnan(by_bits_b) && std::isnan(round_to(f16, x)) &&
                  std::isnan(round_to(bf16, x)))
          << std::hex << f;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(round_to(f16, x)), std::bit_cast<uint32_t>(by_bits_h)) << std::hex << f;
    ASSERT_EQ(std::bit_cast<uint32_t>(round_to(bf16, x)), std::bit_cast<uint32_t>(by_bits_b)) << std::hex << f;
  }
}

#ifdef __FLT16_MAX__
// GCC's _Float16 conversions (libgcc's correctly rounded __truncdfhf2 and
// __truncsfhf2) as a third opinion, from doubles and floats alike.
TEST(Bits, AgreesWithCompilerFloat16) {
  uint64_t state = 12345;
  for (int n = 0; n < 1000000; ++n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // LCG: any bits will do
    double x = std::ldexp(static_cast<double>(state >> 11) * 0x1p-53, static_cast<int>(state % 48) - 30);
    if (n % 2) x = -x;
    ASSERT_EQ(round_to(f16, x), static_cast<float>(static_cast<_Float16>(x))) << std::hexfloat << x;
    float xf = static_cast<float>(x);
    ASSERT_EQ(half_bits(xf), std::bit_cast<uint16_t>(static_cast<_Float16>(xf))) << std::hexfloat << xf;
  }
}
#endif

}  // namespace
}  // namespace mfagen::reference
