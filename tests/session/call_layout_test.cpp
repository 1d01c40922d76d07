// session::call_layout: the shapes of q, k and v in the three layouts of a
// call (dense, packed sequences, paged cache) give the call's shape, strides
// and output shapes, and tensors whose axes disagree are errors naming both.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "session/call_error.h"
#include "session/call_layout.h"

namespace mfagen::session {
namespace {

using ::testing::HasSubstr;

std::string error_of(TensorLayout layout, TensorShape q, TensorShape k, TensorShape v, SequenceSizes sizes = {}) {
  try {
    call_layout(layout, q, k, v, sizes);
  } catch (const CallError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CallLayout, DenseTensorsGiveTheirShape) {
  const CallLayout c = call_layout(TensorLayout::dense, {"q", {2, 8, 5, 64}}, {"k", {2, 2, 9, 64}},
                                   {"v", {2, 2, 9, 32}}, {});
  EXPECT_EQ(c.shape, (AttentionShape{2, 8, 2, 5, 9}));
  EXPECT_EQ(c.head_dim, 64u);
  EXPECT_EQ(c.head_dim_v, 32u);
  EXPECT_EQ(c.strides.k.row, 64u);
  EXPECT_EQ(c.out_shape, (std::vector<uint64_t>{2, 8, 5, 32}));
  EXPECT_EQ(c.lse_shape, (std::vector<uint64_t>{2, 8, 5}));
  ForwardCall call;
  c.apply_to(call);
  EXPECT_EQ(call.total_q, 0u);
  EXPECT_EQ(call.page_size, 0u);
}

TEST(CallLayout, PackedSequencesTakeTheirLongestAndTotals) {
  const CallLayout c = call_layout(TensorLayout::packed, {"q", {10, 4, 16}}, {"k", {15, 2, 16}}, {"v", {15, 2, 8}},
                                   {3, 7, 8, 0});
  EXPECT_EQ(c.shape, (AttentionShape{3, 4, 2, 7, 8}));
  EXPECT_EQ(c.total_q, 10u);
  EXPECT_EQ(c.total_k, 15u);
  EXPECT_EQ(c.strides.q.row, 4u * 16);  // rows of all heads are contiguous
  EXPECT_EQ(c.strides.lse_head, 10u);
  EXPECT_EQ(c.out_shape, (std::vector<uint64_t>{10, 4, 8}));
  EXPECT_EQ(c.lse_shape, (std::vector<uint64_t>{4, 10}));
}

TEST(CallLayout, PagedCachesTakeTheirPagesAndLongestCache) {
  const CallLayout c = call_layout(TensorLayout::paged, {"q", {2, 8, 1, 64}}, {"k", {40, 16, 2, 64}},
                                   {"v", {40, 16, 2, 64}}, {2, 0, 300, 19});
  EXPECT_EQ(c.shape, (AttentionShape{2, 8, 2, 1, 300}));
  EXPECT_EQ(c.page_size, 16u);
  EXPECT_EQ(c.num_pages, 40u);
  EXPECT_EQ(c.max_pages, 19u);
  EXPECT_EQ(c.strides.k.batch, 16u * c.strides.k.row);  // contiguous pages
  ForwardCall call;
  c.apply_to(call);
  EXPECT_EQ(call.num_pages, 40u);
}

TEST(CallLayout, DisagreeingAxesNameBothTensors) {
  EXPECT_THAT(error_of(TensorLayout::dense, {"--q q.npy", {2, 8, 5, 64}}, {"--k k.npy", {3, 2, 9, 64}},
                       {"--v v.npy", {3, 2, 9, 64}}),
              HasSubstr("--q q.npy has shape (2, 8, 5, 64) but --k k.npy has shape (3, 2, 9, 64): the batch sizes"));
  EXPECT_THAT(error_of(TensorLayout::dense, {"q", {2, 6, 5, 64}}, {"k", {2, 4, 9, 64}}, {"v", {2, 4, 9, 64}}),
              HasSubstr("the q heads must be a multiple of the kv heads"));
  EXPECT_THAT(error_of(TensorLayout::paged, {"q", {2, 8, 1, 64}}, {"k", {40, 16, 2, 64}}, {"v", {40, 32, 2, 64}}),
              HasSubstr("the page sizes must match"));
  EXPECT_THAT(error_of(TensorLayout::packed, {"--q q.npy", {2, 8, 5, 64}}, {"k", {15, 2, 16}}, {"v", {15, 2, 8}}),
              HasSubstr("--q q.npy: expected a 3-d (total rows, heads, dim) packed array"));
  EXPECT_THAT(error_of(TensorLayout::paged, {"q", {2, 8, 1, 64}}, {"--k k.npy", {40, 2, 64}}, {"v", {40, 2, 64}}),
              HasSubstr("--k k.npy: expected a 4-d (num_pages, page_size, heads, dim) paged cache"));
}

}  // namespace
}  // namespace mfagen::session
