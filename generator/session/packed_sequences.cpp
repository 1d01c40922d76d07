#include "session/packed_sequences.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "io/npy.h"
#include "mfagen/forward_dispatch.h"
#include "session/call_error.h"

namespace mfagen::session {
namespace {

std::vector<int32_t> read_boundaries(const std::string& option, const std::string& file) {
  const std::string what = option + " " + file;
  if (file.empty()) throw CallError(fmt::format("a varlen call needs {} CU.npy (B + 1 int32 row offsets)", option));
  const io::NpyArray array = io::read_npy(file);
  if (array.shape.size() != 1 || array.shape[0] < 2)
    throw CallError(fmt::format("{}: expected a 1-d array of B + 1 >= 2 entries, found shape {}", what,
                                io::shape_repr(array.shape)));
  if (array.dtype == "<i4") return array.values<int32_t>();
  if (array.dtype != "<i8") throw CallError(fmt::format("{}: expected dtype <i4 (or <i8), found {}", what, array.dtype));
  std::vector<int32_t> narrow;
  for (int64_t x : array.values<int64_t>()) {
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
      throw CallError(fmt::format("{}: entry {} does not fit int32", what, x));
    narrow.push_back(int32_t(x));
  }
  return narrow;
}

uint64_t longest(const std::vector<int32_t>& cu) {
  int64_t most = 1;
  for (size_t b = 0; b + 1 < cu.size(); ++b) most = std::max<int64_t>(most, int64_t(cu[b + 1]) - cu[b]);
  return uint64_t(most);
}

}  // namespace

PackedSequences read_packed_sequences(const std::string& q_file, const std::string& k_file, uint64_t total_q,
                                      uint64_t total_k) {
  PackedSequences s;
  s.cu_seqlens_q = read_boundaries("--cu-seqlens-q", q_file);
  s.cu_seqlens_k = read_boundaries("--cu-seqlens-k", k_file);
  if (s.cu_seqlens_q.size() != s.cu_seqlens_k.size())
    throw CallError(fmt::format("--cu-seqlens-q {} has {} entries and --cu-seqlens-k {} has {}: both need B + 1",
                                q_file, s.cu_seqlens_q.size(), k_file, s.cu_seqlens_k.size()));
  s.batch = s.cu_seqlens_q.size() - 1;
  try {
    // Increasing and ending at the totals first, so that the longest length is meaningful.
    check_cu_seqlens(s.cu_seqlens_q.data(), s.cu_seqlens_q.size(), s.batch, total_q, UINT32_MAX, "--cu-seqlens-q " + q_file);
    check_cu_seqlens(s.cu_seqlens_k.data(), s.cu_seqlens_k.size(), s.batch, total_k, UINT32_MAX, "--cu-seqlens-k " + k_file);
  } catch (const DispatchError& e) {
    throw CallError(e.what());
  }
  s.longest_q = longest(s.cu_seqlens_q);
  s.longest_k = longest(s.cu_seqlens_k);
  return s;
}

PackedSequences read_packed_queries(const std::string& q_file, uint64_t total_q) {
  PackedSequences s;
  s.cu_seqlens_q = read_boundaries("--cu-seqlens-q", q_file);
  s.batch = s.cu_seqlens_q.size() - 1;
  try {
    check_cu_seqlens(s.cu_seqlens_q.data(), s.cu_seqlens_q.size(), s.batch, total_q, UINT32_MAX, "--cu-seqlens-q " + q_file);
  } catch (const DispatchError& e) {
    throw CallError(e.what());
  }
  s.longest_q = longest(s.cu_seqlens_q);
  return s;
}

}  // namespace mfagen::session
