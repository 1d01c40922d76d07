// Dispatch plans for edge shapes: grids and buffer sizes for Sq = 1, Sk = 1,
// lengths that are not multiples of the tiles, huge batches; sizes that do
// not fit 64 bits are errors, not wraps.
#include <gtest/gtest.h>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

const Library& planned_library() {
  static const Library l = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": "float16", "head_dim": 80, "tiles": {"block_q": 32, "block_k": 32, "simdgroups": 4}},
    {"kind": "decode", "dtype": "float32", "head_dim": 64},
    {"kind": "backward", "dtype": "float16", "head_dim": 64},
    {"kind": "decode", "dtype": "float16", "head_dim": 64, "name": "decode16",
     "tiles": {"block_q": 128, "block_k": 32, "simdgroups": 16}}]})"));
  return l;
}

ForwardCall call_for(AttentionShape s, uint32_t d) {
  ForwardCall c;
  c.shape = s;
  c.strides = contiguous_bhsd(s, d, d);
  return c;
}

TEST(DispatchPlan, EdgeShapes) {
  const KernelEntry& fwd = planned_library().kernels()[0];
  DispatchPlan p = Library::plan(fwd, call_for({1, 1, 1, 1, 1}, 80));
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.launches[0].threadgroups, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(p.buffer("q")->bytes, 80u * 2);
  EXPECT_EQ(p.buffer("lse")->bytes, 4u);
  p = Library::plan(fwd, call_for({3, 5, 1, 33, 1}, 80));  // Sq not a multiple of 32, Sk = 1
  EXPECT_EQ(p.shape, (AttentionShape{3, 5, 1, 33, 1}));  // carried for the backends' call trace
  EXPECT_EQ(p.launches[0].threadgroups, (std::array<uint32_t, 3>{2, 5, 3}));
  EXPECT_EQ(p.buffer("k")->bytes, 3u * 1 * 1 * 80 * 2);
  EXPECT_EQ(p.buffer("out")->bytes, 3u * 5 * 33 * 80 * 2);
  p = Library::plan(fwd, call_for({1u << 20, 1, 1, 1, 7}, 80));  // a million batches
  EXPECT_EQ(p.launches[0].threadgroups[2], 1u << 20);
  EXPECT_EQ(p.buffer("q")->bytes, (uint64_t(1) << 20) * 80 * 2);
}

TEST(DispatchPlan, SizesThatOverflow64BitsAreErrors) {
  const KernelEntry& fwd = planned_library().kernels()[0];
  ForwardCall c = call_for({1, 1, 1, 1000, 1000}, 80);
  c.strides.k.head = uint64_t(1) << 62;  // a stride that wraps when multiplied
  c.shape.heads_kv = c.shape.heads_q = 8;
  EXPECT_THROW(Library::plan(fwd, c), DispatchError);
  EXPECT_THROW(Library::plan(fwd, call_for({uint64_t(1) << 33, 1, 1, 1, 1}, 80)), DispatchError);
  EXPECT_THROW(Library::plan(fwd, call_for({1, 6, 4, 1, 1}, 80)), DispatchError);  // heads_q % heads_kv
  EXPECT_THROW(Library::plan(fwd, call_for({1, 1, 1, 0, 1}, 80)), DispatchError);  // empty
}

TEST(DispatchPlan, DecodeAndBackwardListTheirLaunchesInOrder) {
  const KernelEntry& decode = planned_library().kernels()[1];
  DispatchPlan p = Library::plan(decode, call_for({1, 8, 1, 1, 32768}, 64));
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.launches[1].entry, decode.name + "_combine");
  EXPECT_GT(p.launches[0].threadgroups[0], 1u);  // split over the keys
  EXPECT_TRUE(p.buffer("out_partial")->scratch);
  EXPECT_THROW(Library::plan(decode, call_for({1, 8, 1, 17, 100}, 64)), DispatchError);  // too many queries


  // A decode call runs as many 8-row simdgroups as its GQA group's rows
  // (heads_q / heads_kv x seq_q) need, rounded up to a power of two, at most
  // the kernel's 8 (64 rows); more rows take more row blocks.
  ASSERT_EQ(decode.info.threads, 256u);
  ASSERT_EQ(decode.info.block_q, 64u);
  struct Case {
    AttentionShape shape;
    uint32_t threads, row_blocks;
  };
  for (const Case& c : {Case{{1, 8, 8, 1, 4096}, 32, 1},     // one row
                        Case{{1, 32, 4, 1, 4096}, 32, 1},    // GQA 8: 8 rows
                        Case{{1, 32, 8, 4, 4096}, 64, 1},    // GQA 4, 4 queries: 16 rows
                        Case{{1, 32, 8, 5, 4096}, 128, 1},   // 20 rows: 3 tiles, 4 simdgroups
                        Case{{1, 32, 8, 16, 4096}, 256, 1},  // 64 rows
                        Case{{1, 32, 4, 16, 4096}, 256, 2}}) {  // GQA 8, 16 queries: 128 rows
    p = Library::plan(decode, call_for(c.shape, 64));
    const uint32_t rows = uint32_t(c.shape.heads_q / c.shape.heads_kv * c.shape.seq_q);
    EXPECT_EQ(p.launches[0].threads_per_threadgroup[0], c.threads) << rows << " rows";
    EXPECT_EQ(p.launches[0].threadgroups[1], c.shape.heads_kv * c.row_blocks) << rows << " rows";
    EXPECT_EQ(p.launches[0].threadgroup_bytes, decode.info.threadgroup_bytes);
  }

  // A kernel of 16 simdgroups still runs at most 8 per call (the template
  // compiles its staging for 1, 2, 4 and 8 and for the kernel's own count).
  const KernelEntry& decode16 = planned_library().kernels()[3];
  p = Library::plan(decode16, call_for({1, 32, 2, 16, 4096}, 64));  // 256 rows
  EXPECT_EQ(p.launches[0].threads_per_threadgroup[0], 256u);
  EXPECT_EQ(p.launches[0].threadgroups[1], 2u * 4);  // 4 row blocks of 64 rows per kv head

  const KernelEntry& backward = planned_library().kernels()[2];
  p = Library::plan(backward, call_for({2, 4, 2, 50, 70}, 64));
  ASSERT_EQ(p.launches.size(), 3u);
  EXPECT_EQ(p.launches[0].entry, backward.name + "_preprocess");
  EXPECT_EQ(p.launches[1].entry, backward.name + "_dkdv");
  EXPECT_EQ(p.launches[2].entry, backward.name + "_dq");
  const uint32_t key_blocks = (70 + backward.info.block_k - 1) / backward.info.block_k;
  EXPECT_EQ(p.launches[1].threadgroups, (std::array<uint32_t, 3>{key_blocks, 2, 2}));  // ceil(70 / block_k)
  EXPECT_EQ(p.buffer("dk")->bytes, p.buffer("k")->bytes);
}

}  // namespace
}  // namespace mfagen
