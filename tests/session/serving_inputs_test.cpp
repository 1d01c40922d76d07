// The serving inputs a call reads from .npy files (DESIGN.md section 13):
// sink logits, cu_seqlens and a paged cache's block table and lengths. Valid
// files give what the kernels take; files that do not fit are CallErrors
// naming the option, the file and the entry, before anything runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/npy.h"
#include "session/call_error.h"
#include "session/packed_sequences.h"
#include "session/paged_cache_inputs.h"
#include "session/sink_logits.h"

namespace mfagen::session {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ServingInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mfagen-serving-inputs-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  template <class T>
  std::string npy(const std::string& name, const std::vector<T>& values, std::vector<uint64_t> shape) {
    const fs::path path = dir_ / name;
    io::write_npy_atomic(path, io::NpyArray::from<T>(values, std::move(shape)));
    return path.string();
  }

  template <class F>
  std::string error_of(F&& f) {
    try {
      f();
    } catch (const CallError& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path dir_;
};

TEST_F(ServingInputs, SinkLogitsOnePerHead) {
  EXPECT_EQ(read_sink_logits(npy<float>("s.npy", {1.5f, -INFINITY}, {2}), 2), (std::vector<float>{1.5f, -INFINITY}));
  EXPECT_THAT(error_of([&] { read_sink_logits(npy<float>("s3.npy", {1, 2, 3}, {3}), 2); }),
              HasSubstr("expected shape (2,), one logit per q head, found (3,)"));
  EXPECT_THAT(error_of([&] { read_sink_logits(npy<float>("nan.npy", {NAN, 0}, {2}), 2); }),
              HasSubstr("holds NaN or +inf"));
  EXPECT_THAT(error_of([&] { read_sink_logits(npy<double>("f8.npy", {0, 0}, {2}), 2); }),
              HasSubstr("expected dtype <f4, found <f8"));
}

TEST_F(ServingInputs, CuSeqlensGiveBatchAndLongest) {
  const PackedSequences s =
      read_packed_sequences(npy<int32_t>("q.npy", {0, 3, 3, 10}, {4}), npy<int64_t>("k.npy", {0, 5, 7, 15}, {4}), 10, 15);
  EXPECT_EQ(s.batch, 3u);
  EXPECT_EQ(s.longest_q, 7u);
  EXPECT_EQ(s.longest_k, 8u);
  const std::string k = npy<int32_t>("k_ok.npy", {0, 5, 7, 15}, {4});
  EXPECT_THAT(error_of([&] { read_packed_sequences(npy<int32_t>("d.npy", {0, 3, 2, 10}, {4}), k, 10, 15); }),
              HasSubstr("the entries must not decrease"));
  EXPECT_THAT(error_of([&] { read_packed_sequences(npy<int32_t>("e.npy", {0, 3, 3, 9}, {4}), k, 10, 15); }),
              HasSubstr("must equal the rows of the packed tensors (10)"));
  EXPECT_THAT(error_of([&] { read_packed_sequences(npy<int32_t>("n.npy", {-1, 3, 3, 10}, {4}), k, 10, 15); }),
              HasSubstr("the first sequence starts at row 0"));
  EXPECT_THAT(error_of([&] { read_packed_sequences(npy<int32_t>("one.npy", {0}, {1}), k, 10, 15); }),
              HasSubstr("expected a 1-d array of B + 1 >= 2 entries"));
  EXPECT_THAT(error_of([&] { read_packed_sequences(npy<int64_t>("big.npy", {0, 1ll << 40, 3, 10}, {4}), k, 10, 15); }),
              HasSubstr("does not fit int32"));
}

TEST_F(ServingInputs, PagedCacheTablesAreCheckedAgainstTheCache) {
  const std::string table = npy<int32_t>("bt.npy", {3, 0, 4, 3, 1, -1}, {2, 3});
  const PagedCacheInputs in = read_paged_cache(table, npy<int32_t>("cs.npy", {40, 20}, {2}), 2, 5, 16);
  EXPECT_EQ(in.max_pages, 3u);
  EXPECT_EQ(in.longest, 40u);
  EXPECT_THAT(error_of([&] { read_paged_cache(table, npy<int32_t>("cs_long.npy", {49, 20}, {2}), 2, 5, 16); }),
              HasSubstr("cache_seqlens[0] = 49 must be between 0 and 48"));
  EXPECT_THAT(error_of([&] { read_paged_cache(npy<int32_t>("bt_out.npy", {3, 0, 9, 3, 1, -1}, {2, 3}),
                                              npy<int32_t>("cs2.npy", {40, 20}, {2}), 2, 5, 16); }),
              HasSubstr("block_table[0][2] = 9 is not a page of the cache (0 .. 4)"));
  EXPECT_THAT(error_of([&] { read_paged_cache(table, npy<int32_t>("cs_neg.npy", {-3, 20}, {2}), 2, 5, 16); }),
              HasSubstr("cache_seqlens[0] = -3"));
  EXPECT_THAT(error_of([&] { read_paged_cache(table, npy<int32_t>("cs3.npy", {1, 2, 3}, {3}), 2, 5, 16); }),
              HasSubstr("expected shape (2,), found (3,)"));
}

}  // namespace
}  // namespace mfagen::session
