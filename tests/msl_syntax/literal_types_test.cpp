// Unsuffixed floating literals are float in MSL (mfagen/msl/literal_types.h):
// both lowerings rewrite them, in code and in #define bodies, and leave
// every other number alone.
#include <gtest/gtest.h>

#include <cstring>

#include "mfagen/msl/literal_types.h"
#include "mfagen/msl/token_view.h"

using namespace mfagen::msl;

namespace {

std::string typed(std::string_view source) {
  TokenView v(source);
  type_floating_literals_as_float(v);
  return v.joined();
}

TEST(LiteralTypes, UnsuffixedFloatingLiteralsGetTheFloatSuffix) {
  EXPECT_EQ(typed("float4 h = 0.5*x + 1. + .25 + 1e-3 + 2E+4 + 0x1.8p3;"),
            "float4 h = 0.5f*x + 1.f + .25f + 1e-3f + 2E+4f + 0x1.8p3f;");
}

TEST(LiteralTypes, SuffixedLiteralsAndIntegersStay) {
  const std::string source = "x = 0.5f + 0.5h + 0.5F + 2 + 0x1f + 0x1e + 7u + 1L + 0.5L + a.b1;";
  EXPECT_EQ(typed(source), source);
}

TEST(LiteralTypes, MacroBodiesAreTyped) {
  EXPECT_EQ(typed("#define GELU 0.5*x \\\n  + 1e-3\n#include <x.h>\nfloat y = GELU;\n"),
            "#define GELU 0.5f*x \\\n  + 1e-3f\n#include <x.h>\nfloat y = GELU;\n");
  const std::string not_a_define = "#if 1\n#pragma unroll(4)\n#endif\n";
  EXPECT_EQ(typed(not_a_define), not_a_define);
}

TEST(LiteralTypes, AttributesAreLeftAlone) {
  const std::string source = "[[clang::weird(0.5)]] float y;";
  EXPECT_EQ(typed(source), source);
}

// The value is the double rounded to float (clang's rule for OpenCL without
// double precision). 1.0000000596046447753906250000000001 is just above the
// midpoint between 1 and the next float, so it rounds up directly, but its
// double is the midpoint itself, which rounds to even (1).
TEST(LiteralTypes, DoubleRoundingIsKept) {
  const std::string literal = "1.0000000596046447753906250000000001";
  auto spelled = as_float_literal(literal);
  ASSERT_TRUE(spelled.has_value());
  EXPECT_EQ(*spelled, "0x1p+0f");
  EXPECT_EQ(*as_float_literal("0.1"), "0.1f");
}

TEST(LiteralTypes, LongDoubleLiteralsAreRecognized) {
  EXPECT_TRUE(is_long_double_literal("0.5L"));
  EXPECT_TRUE(is_long_double_literal("1e3l"));
  EXPECT_TRUE(is_long_double_literal("0x1p3L"));
  EXPECT_FALSE(is_long_double_literal("1L"));
  EXPECT_FALSE(is_long_double_literal("0x1fL"));
  EXPECT_FALSE(is_long_double_literal("0.5f"));
}

}  // namespace
