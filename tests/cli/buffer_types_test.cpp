// MSL buffer parameter types -> the .npy dtypes `mfagen exec` accepts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "buffer_types.h"

namespace mfagen::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PointeeType, DropsAddressSpacesQualifiersAndNamespace) {
  EXPECT_EQ(pointee_type("device const half*"), "half");
  EXPECT_EQ(pointee_type("const device half *"), "half");
  EXPECT_EQ(pointee_type("device float4*"), "float4");
  EXPECT_EQ(pointee_type("constant Params&"), "Params");
  EXPECT_EQ(pointee_type("constant metal::float4 &"), "float4");
  EXPECT_EQ(pointee_type("device ::metal::atomic_uint*"), "atomic_uint");
  EXPECT_EQ(pointee_type("device const float* __restrict"), "float");
  EXPECT_EQ(pointee_type("device volatile unsigned int*"), "unsigned int");
  EXPECT_EQ(pointee_type("device metal::vec<float, 4>*"), "vec<float,4>");
  EXPECT_EQ(pointee_type("threadgroup T*"), "T");
  EXPECT_EQ(pointee_type("device ns::Params*"), "ns::Params");
}

TEST(BufferElement, Scalars) {
  auto dtypes = [](std::string_view type) { return buffer_element(type).value().dtypes; };
  EXPECT_THAT(dtypes("device float*"), ElementsAre("<f4"));
  EXPECT_THAT(dtypes("device const half*"), ElementsAre("<f2"));
  EXPECT_THAT(dtypes("device bfloat*"), ElementsAre("<u2", "<i2"));
  EXPECT_THAT(dtypes("device int*"), ElementsAre("<i4"));
  EXPECT_THAT(dtypes("device uint*"), ElementsAre("<u4"));
  EXPECT_THAT(dtypes("device short*"), ElementsAre("<i2"));
  EXPECT_THAT(dtypes("device ushort*"), ElementsAre("<u2"));
  EXPECT_THAT(dtypes("device char*"), ElementsAre("|i1"));
  EXPECT_THAT(dtypes("device uchar*"), ElementsAre("|u1"));
  EXPECT_THAT(dtypes("device bool*"), ElementsAre("|b1"));
  EXPECT_THAT(dtypes("device long*"), ElementsAre("<i8"));
  EXPECT_THAT(dtypes("device ulong*"), ElementsAre("<u8"));
  EXPECT_THAT(dtypes("device uint32_t*"), ElementsAre("<u4"));
  EXPECT_THAT(dtypes("device int8_t*"), ElementsAre("|i1"));
  EXPECT_THAT(dtypes("device atomic_uint*"), ElementsAre("<u4"));
  EXPECT_THAT(dtypes("device metal::atomic<int>*"), ElementsAre("<i4"));
  EXPECT_THAT(dtypes("constant float&"), ElementsAre("<f4"));
  EXPECT_EQ(buffer_element("device float*")->width, 1u);
}

TEST(BufferElement, VectorsAndMatrices) {
  auto width = [](std::string_view type) { return buffer_element(type).value().width; };
  EXPECT_EQ(width("device float4*"), 4u);
  EXPECT_EQ(width("device half2*"), 2u);
  EXPECT_EQ(width("device float3*"), 4u);  // 16 bytes in Metal
  EXPECT_EQ(width("device packed_float3*"), 3u);
  EXPECT_EQ(width("device uchar4*"), 4u);
  EXPECT_EQ(width("device bfloat4*"), 4u);
  EXPECT_EQ(width("device vec<half, 3>*"), 4u);
  EXPECT_EQ(width("constant float4x4&"), 16u);
  EXPECT_EQ(width("device half3x3*"), 12u);
  EXPECT_EQ(width("device float2x3*"), 8u);
  EXPECT_EQ(buffer_element("device float4*")->scalar, "float");
  EXPECT_THAT(buffer_element("device ushort2*")->dtypes, ElementsAre("<u2"));
}

TEST(BufferElement, UnknownLayoutsAcceptAnything) {
  EXPECT_FALSE(buffer_element("constant Params&"));
  EXPECT_FALSE(buffer_element("device T*"));
  EXPECT_FALSE(buffer_element("device float5*"));
  EXPECT_FALSE(buffer_element("device int4x4*"));  // MSL has no integer matrices
  EXPECT_FALSE(buffer_element("device MyStruct*"));
  EXPECT_EQ(buffer_mismatch("constant Params&", true, "<f8", 3), "");
}

TEST(BufferMismatch, ExplainsWhatDoesNotFit) {
  EXPECT_EQ(buffer_mismatch("device float*", false, "<f4", 10), "");
  EXPECT_EQ(buffer_mismatch("device bfloat*", false, "<i2", 3), "");
  EXPECT_EQ(buffer_mismatch("device float4*", false, "<f4", 8), "");
  EXPECT_EQ(buffer_mismatch("device float*", false, "<f4", 0), "");
  EXPECT_EQ(buffer_mismatch("constant float&", true, "<f4", 1), "");
  EXPECT_EQ(buffer_mismatch("constant float4&", true, "<f4", 4), "");

  EXPECT_THAT(buffer_mismatch("device const half*", false, "<f4", 4),
              AllOf(HasSubstr("`half`"), HasSubstr("<f2"), HasSubstr("<f4")));
  EXPECT_THAT(buffer_mismatch("device bfloat*", false, "<f2", 4), HasSubstr("<u2 or <i2"));
  EXPECT_THAT(buffer_mismatch("device float4*", false, "<f4", 6), HasSubstr("not a multiple of 4"));
  EXPECT_THAT(buffer_mismatch("constant float&", true, "<f4", 3), HasSubstr("single value"));
}

}  // namespace
}  // namespace mfagen::cli
