// The reference's quantized formats (DESIGN.md section 13) against values
// worked out by hand from the format definitions: fp8 E4M3FN codes, q8_0 and
// q4_0 blocks byte by byte (scale first, little-endian; q4_0's nibble order),
// sizes, and the quantizers' rounding.
#include "quantized_kv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "dtype_rounding.h"

namespace mfagen::reference {
namespace {

TEST(Fp8E4m3, CodesHaveTheirDefinedValues) {
  EXPECT_EQ(fp8_e4m3_value(0x00), 0.0);
  EXPECT_TRUE(std::signbit(fp8_e4m3_value(0x80)));
  EXPECT_EQ(fp8_e4m3_value(0x38), 1.0);                // exponent 7 = bias
  EXPECT_EQ(fp8_e4m3_value(0xB8), -1.0);
  EXPECT_EQ(fp8_e4m3_value(0x3C), 1.5);                // mantissa 4/8
  EXPECT_EQ(fp8_e4m3_value(0x7E), 448.0);              // the largest finite value
  EXPECT_EQ(fp8_e4m3_value(0x08), std::ldexp(1, -6));  // the smallest normal
  EXPECT_EQ(fp8_e4m3_value(0x01), std::ldexp(1, -9));  // the smallest subnormal
  EXPECT_EQ(fp8_e4m3_value(0x07), 7 * std::ldexp(1, -9));
  EXPECT_EQ(fp8_e4m3_value(0x78), 256.0);              // exponent 15 is finite in E4M3FN
  EXPECT_TRUE(std::isnan(fp8_e4m3_value(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_value(0xFF)));
}

TEST(QuantizedRows, Q8BlockIsScaleThenSignedCodes) {
  std::vector<uint8_t> block(34, 0);
  const uint16_t d = half_bits(0.5f);
  block[0] = uint8_t(d & 0xFF);
  block[1] = uint8_t(d >> 8);
  block[2] = 3;                 // value 0: 0.5 * 3
  block[3] = uint8_t(-128);     // value 1: 0.5 * -128
  block[33] = 127;              // value 31
  const std::vector<double> x = dequantize_rows(KvQuant::q8_0, block, 1, 32);
  EXPECT_EQ(x[0], 1.5);
  EXPECT_EQ(x[1], -64.0);
  EXPECT_EQ(x[2], 0.0);
  EXPECT_EQ(x[31], 63.5);
}

TEST(QuantizedRows, Q4ValuesLowNibblesFirstThenHighNibbles) {
  std::vector<uint8_t> block(18, 0x88);  // every code 8: value 0
  const uint16_t d = half_bits(-2.0f);
  block[0] = uint8_t(d & 0xFF);
  block[1] = uint8_t(d >> 8);
  block[2] = 0xF0;  // value 0: low nibble 0 -> -2 * (0 - 8) = 16; value 16: high nibble 15 -> -2 * 7 = -14
  block[17] = 0x1A; // value 15: low nibble 10 -> -4; value 31: high nibble 1 -> 14
  const std::vector<double> x = dequantize_rows(KvQuant::q4_0, block, 1, 32);
  EXPECT_EQ(x[0], 16.0);
  EXPECT_EQ(x[16], -14.0);
  EXPECT_EQ(x[15], -4.0);
  EXPECT_EQ(x[31], 14.0);
  EXPECT_EQ(x[1], 0.0);
}

TEST(QuantizedRows, Fp8RowsTakeTheTensorScale) {
  const std::vector<uint8_t> codes = {0x38, 0xBC, 0x7E};
  const std::vector<double> x = dequantize_rows(KvQuant::fp8_e4m3, codes, 1, 3, 0.25);
  EXPECT_EQ(x, (std::vector<double>{0.25, -0.375, 112.0}));
}

TEST(QuantizedRows, SizesAreWholeBlocksAndChecked) {
  EXPECT_EQ(quantized_row_bytes(KvQuant::q8_0, 128), 4u * 34);
  EXPECT_EQ(quantized_row_bytes(KvQuant::q4_0, 64), 2u * 18);
  EXPECT_EQ(quantized_row_bytes(KvQuant::fp8_e4m3, 72), 72u);
  EXPECT_THROW(quantized_row_bytes(KvQuant::q8_0, 48), std::invalid_argument);
  const std::vector<uint8_t> short_rows(67);
  EXPECT_THROW(dequantize_rows(KvQuant::q8_0, short_rows, 1, 64), std::invalid_argument);
}

TEST(QuantizeRows, Q8RoundsToTheNearestStepOfAmaxOver127) {
  std::vector<double> x(32, 0.0);
  x[0] = 12.7;   // amax: d = 0.1 (as float16), code 127
  x[1] = -0.26;  // code round(-2.6) = -3
  const std::vector<uint8_t> stored = quantize_rows(KvQuant::q8_0, x, 1, 32);
  EXPECT_EQ(int8_t(stored[2]), 127);
  EXPECT_EQ(int8_t(stored[3]), -3);
  const std::vector<double> back = dequantize_rows(KvQuant::q8_0, stored, 1, 32);
  EXPECT_NEAR(back[0], 12.7, 0.01);
}

TEST(QuantizeRows, Q4MapsTheLargestMagnitudeToCodeZero) {
  std::vector<double> x(32, 0.0);
  x[5] = -4.0;  // d = -4 / -8 = 0.5; -4 -> code 0
  x[20] = 1.0;  // 1 / 0.5 + 8.5 = 10.5 -> 10
  const std::vector<uint8_t> stored = quantize_rows(KvQuant::q4_0, x, 1, 32);
  const std::vector<double> back = dequantize_rows(KvQuant::q4_0, stored, 1, 32);
  EXPECT_EQ(back[5], -4.0);
  EXPECT_EQ(back[20], 1.0);
  EXPECT_EQ(back[0], 0.0);
  EXPECT_EQ(stored[2 + 5] & 0xF, 0);
  EXPECT_EQ(stored[2 + 4] >> 4, 10);  // value 20: high nibble of byte 4
}

TEST(QuantizeRows, Fp8TakesTheNearestCodeAndSaturates) {
  const std::vector<double> x = {1.0, 1.0625, 1.1, 1000.0, -0.0009};
  const std::vector<uint8_t> stored = quantize_rows(KvQuant::fp8_e4m3, x, 1, 5);
  EXPECT_EQ(stored[0], 0x38);
  EXPECT_EQ(stored[1], 0x38);  // halfway between 1 and 1.125: the even code
  EXPECT_EQ(stored[2], 0x39);
  EXPECT_EQ(stored[3], 0x7E);  // 448
  EXPECT_EQ(stored[4], 0x80);  // below half the smallest subnormal (2^-10): -0
}

}  // namespace
}  // namespace mfagen::reference
