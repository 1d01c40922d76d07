// Quantized caches read as their raw stored rows (DESIGN.md section 13): the
// shape in values the call layout checks, strides in storage units, the
// format from --kv-dtype or the spec set, and CallErrors for arrays that do
// not fit the format.
#include "session/quantized_cache_inputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "session/call_error.h"
#include "session/call_layout.h"

namespace mfagen::session {
namespace {

using ::testing::HasSubstr;

io::NpyArray raw(std::vector<uint64_t> shape, const char* dtype = "|u1") {
  io::NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.resize(a.element_count() * a.element_size());
  return a;
}

TEST(QuantizedCache, RowsOfBlocksBecomeValuesAndStridesCountBlocks) {
  const QuantizedCache k = read_quantized_cache(raw({2, 4, 100, 4 * 34}), KvFormat::q8_0, "--k k.npy");
  EXPECT_EQ(k.shape.shape, (std::vector<uint64_t>{2, 4, 100, 128}));
  EXPECT_EQ(k.bytes.size(), 2u * 4 * 100 * 136);
  EXPECT_EQ(k.shape.what, "--k k.npy (q8_0 rows of 136 bytes = 128 values)");
  const TensorShape q{"--q q.npy", {2, 8, 7, 128}};
  const CallLayout c = call_layout(TensorLayout::dense, q, k.shape, k.shape, {}, KvFormat::q8_0);
  EXPECT_EQ(c.head_dim, 128u);
  EXPECT_EQ(c.strides.k.row, 4u);  // blocks
  EXPECT_EQ(c.strides.k.head, 400u);
  EXPECT_EQ(c.strides.q.row, 128u);  // elements
  const QuantizedCache fp8 = read_quantized_cache(raw({2, 4, 100, 72}), KvFormat::fp8_e4m3, "--v v.npy");
  EXPECT_EQ(fp8.shape.shape.back(), 72u);
  const QuantizedCache q4 = read_quantized_cache(raw({3, 16, 2, 2 * 18}), KvFormat::q4_0, "--k k.npy");
  EXPECT_EQ(q4.shape.shape.back(), 64u);
}

TEST(QuantizedCache, ArraysThatDoNotFitTheFormatAreCallErrors) {
  auto error_of = [](const io::NpyArray& a, KvFormat f) {
    try {
      read_quantized_cache(a, f, "--k k.npy");
    } catch (const CallError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of(raw({1, 1, 5, 35}), KvFormat::q8_0), HasSubstr("35 bytes, is not whole q8_0 rows"));
  EXPECT_THAT(error_of(raw({1, 1, 5, 36}, "<f4"), KvFormat::q4_0), HasSubstr("found dtype <f4"));
  EXPECT_THAT(error_of(raw({1, 0, 5, 36}), KvFormat::q4_0), HasSubstr("has an empty dimension"));
}

TEST(QuantizedCache, FormatFromTheOptionOrTheSet) {
  const io::NpyArray bytes = raw({1, 1, 4, 34}), floats = raw({1, 1, 4, 32}, "<f4");
  const std::vector<KvFormat> one = {KvFormat::elements, KvFormat::q4_0};
  const std::vector<KvFormat> two = {KvFormat::q4_0, KvFormat::fp8_e4m3};
  EXPECT_EQ(choose_kv_format(std::nullopt, bytes, bytes, one), KvFormat::q4_0);
  EXPECT_EQ(choose_kv_format(std::string("fp8_e4m3"), bytes, bytes, two), KvFormat::fp8_e4m3);
  EXPECT_EQ(choose_kv_format(std::nullopt, floats, floats, two), std::nullopt);
  EXPECT_THROW(choose_kv_format(std::nullopt, bytes, bytes, two), CallError);
  EXPECT_THROW(choose_kv_format(std::nullopt, bytes, bytes, {KvFormat::elements}), CallError);
  EXPECT_THROW(choose_kv_format(std::string("q5_1"), bytes, bytes, two), CallError);
}

}  // namespace
}  // namespace mfagen::session
