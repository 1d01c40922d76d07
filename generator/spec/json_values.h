// Reading typed values out of a spec's JSON, with the error wording shared by
// every field: "<path>: expected <what>, found <what was there>".
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "spec/json_text.h"
#include "spec/kernel_spec.h"

namespace mfagen::spec::detail {

// A place in a spec file: the file and the JSON path inside it.
struct Where {
  std::string file;
  std::string path;  // "" for the root

  Where field(std::string_view key) const;  // "kernels[0]" -> "kernels[0].tiles"
  Where element(size_t index) const;        // "kernels[0].dtype" -> "kernels[0].dtype[1]"
  [[noreturn]] void fail(std::string message) const;
  [[noreturn]] void fail_expected(std::string_view expected, const Json& found) const;
};

// How a value reads in "found ...": its type when the type is wrong
// ("a string", "a list", "an empty list", "null") ...
std::string describe_type(const Json& value);
// ... or the value itself when the type is right but the value is not
// ("600", "128.5", "\"fp8\""). Long strings are shortened.
std::string describe_value(const Json& value);

// Refuses any key of `object` not in `known`, listing the accepted ones.
void check_known_fields(const Json& object, const Where& at,
                        std::span<const std::string_view> known);

// A JSON integer (128, not 128.0 or "128" or true); `expected` is what the
// field wants, for the message ("a multiple of 8 in 8..1024"). Values beyond
// int64 saturate, which every range check then refuses.
int64_t read_json_integer(const Json& value, const Where& at, std::string_view expected);
// A JSON integer in lo..hi.
int64_t read_integer(const Json& value, const Where& at, int64_t lo, int64_t hi);
bool read_bool(const Json& value, const Where& at);
const std::string& read_string(const Json& value, const Where& at);

// "\"a\", \"b\", \"c\"": the JSON spellings of enum values.
template <class E, size_t N>
std::string quoted_list(const std::array<E, N>& values) {
  std::string out;
  for (E v : values) out += (out.empty() ? "\"" : ", \"") + std::string(to_string(v)) + "\"";
  return out;
}

// One of the JSON spellings of the values in `all` (to_string of each).
template <class E, size_t N>
E read_enum(const Json& value, const Where& at, const std::array<E, N>& all) {
  const std::string& text = read_string(value, at);
  for (E v : all) {
    if (to_string(v) == text) return v;
  }
  at.fail(fmt::format("expected one of {}, found {}", quoted_list(all), describe_value(value)));
}

}  // namespace mfagen::spec::detail
