#include "profile/sequence_lengths.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "io/npy.h"
#include "session/call_error.h"

namespace mfagen::profile {
namespace {

constexpr uint64_t kLongest = 0x7fffffff;  // kernels take lengths as int32
constexpr uint64_t kMostSequences = 1 << 20;

[[noreturn]] void lengths_error(std::string_view option, std::string_view text, const std::string& what) {
  throw session::CallError(fmt::format("{} {}: {}", option, text, what));
}

// A whole number in [0, limit], all of `text`.
uint64_t whole_length(std::string_view text, std::string_view option, std::string_view item, std::string_view what,
                      uint64_t limit) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    lengths_error(option, item, fmt::format("expected {} (a whole number), found \"{}\"", what, text));
  if (value > limit) lengths_error(option, item, fmt::format("{} {} is above {}", what, value, limit));
  return value;
}

std::vector<uint64_t> from_npy(std::string_view path, std::string_view option) {
  const io::NpyArray array = io::read_npy(std::filesystem::path(path));
  if (array.shape.size() != 1)
    lengths_error(option, path,
                  fmt::format("expected a 1-d array of lengths, found shape {}", io::shape_repr(array.shape)));
  std::vector<int64_t> values;
  if (array.dtype == "<i4") {
    for (int32_t v : array.values<int32_t>()) values.push_back(v);
  } else if (array.dtype == "<i8") {
    values = array.values<int64_t>();
  } else {
    lengths_error(option, path, fmt::format("expected int32 or int64 lengths (<i4, <i8), found {}", array.dtype));
  }
  std::vector<uint64_t> lengths;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || uint64_t(values[i]) > kLongest)
      lengths_error(option, path, fmt::format("entry {} is {}; lengths are 0 to {}", i, values[i], kLongest));
    lengths.push_back(uint64_t(values[i]));
  }
  return lengths;
}

}  // namespace

std::vector<uint64_t> parse_lengths(std::string_view text, std::string_view option) {
  std::vector<uint64_t> lengths;
  if (text.size() > 4 && text.substr(text.size() - 4) == ".npy") {
    lengths = from_npy(text, option);
  } else if (!text.empty()) {
    size_t at = 0;
    while (at <= text.size()) {
      const size_t comma = std::min(text.find(',', at), text.size());
      const std::string_view item = text.substr(at, comma - at);
      at = comma + 1;
      // Messages name the whole list, and the item when the list has several.
      const std::string where = item == text ? std::string(text) : fmt::format("{}: item \"{}\"", text, item);
      if (item.empty())
        lengths_error(option, text,
                      "expected comma-separated lengths (N, NxCOUNT or A..BxCOUNT), found an empty item");
      const size_t x = item.find('x');
      const std::string_view value = item.substr(0, x);
      const uint64_t count = x == std::string_view::npos
                                 ? 1
                                 : whole_length(item.substr(x + 1), option, where, "a count after 'x'", kMostSequences);
      if (count == 0) lengths_error(option, where, "a count after 'x' must be at least 1");
      if (lengths.size() + count > kMostSequences)
        lengths_error(option, text, fmt::format("more than {} sequences", kMostSequences));
      if (const size_t range = value.find(".."); range != std::string_view::npos) {
        if (x == std::string_view::npos)
          lengths_error(option, where,
                        "a range A..B needs a count: A..BxCOUNT (COUNT lengths evenly spaced from A to B)");
        const uint64_t first = whole_length(value.substr(0, range), option, where, "a length", kLongest);
        const uint64_t last = whole_length(value.substr(range + 2), option, where, "a length", kLongest);
        for (uint64_t i = 0; i < count; ++i) {
          const double step = count == 1 ? 0 : (double(last) - double(first)) / double(count - 1);
          lengths.push_back(uint64_t(std::llround(double(first) + double(i) * step)));
        }
      } else {
        lengths.insert(lengths.end(), count, whole_length(value, option, where, "a length", kLongest));
      }
    }
  }
  if (lengths.empty()) lengths_error(option, text, "expected at least one sequence");
  return lengths;
}

SequenceLengths complete_lengths(std::vector<uint64_t> q, std::vector<uint64_t> k, uint64_t uniform_q,
                                 uint64_t uniform_k) {
  if (q.empty()) q.assign(k.size(), uniform_q);
  if (k.empty()) k.assign(q.size(), uniform_k);
  if (q.size() != k.size())
    throw session::CallError(fmt::format("--seqlens-q lists {} sequences and --seqlens-k {}: give one length per "
                                         "sequence in each (or one list, the other then --seq-q / --seq-k for all)",
                                         q.size(), k.size()));
  if (q.empty()) throw session::CallError("--seqlens-q / --seqlens-k: expected at least one sequence");
  if (*std::max_element(q.begin(), q.end()) == 0)
    throw session::CallError("--seqlens-q: every sequence has 0 queries; expected at least one query in the batch");
  if (*std::max_element(k.begin(), k.end()) == 0)
    throw session::CallError("--seqlens-k: every sequence has 0 keys; expected at least one key in the batch");
  return {std::move(q), std::move(k)};
}

std::string lengths_text(const std::vector<uint64_t>& lengths) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < lengths.size();) {
    size_t j = i;
    while (j < lengths.size() && lengths[j] == lengths[i]) ++j;
    runs.push_back(j - i == 1 ? fmt::format("{}", lengths[i]) : fmt::format("{} x{}", lengths[i], j - i));
    i = j;
  }
  if (runs.size() <= 6) return fmt::format("{}", fmt::join(runs, ", "));
  const auto [low, high] = std::minmax_element(lengths.begin(), lengths.end());
  return fmt::format("{} sequences, {}..{}, total {}", lengths.size(), *low, *high,
                     std::accumulate(lengths.begin(), lengths.end(), uint64_t(0)));
}

}  // namespace mfagen::profile
