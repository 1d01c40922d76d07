#include "arg_parsing.h"

#include <fmt/format.h>

#include <charconv>

namespace mfagen::cli {

uint64_t parse_unsigned(std::string_view text, std::string_view option, uint64_t max) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size())
    throw UserError(fmt::format("{}: '{}' is not a non-negative integer", option, text));
  if (ec == std::errc::result_out_of_range || value > max)
    throw UserError(fmt::format("{}: {} is too large (at most {})", option, text, max));
  return value;
}

std::array<uint32_t, 3> parse_dim3(std::string_view text, std::string_view option) {
  std::array<uint32_t, 3> dims{1, 1, 1};
  size_t count = 0;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view part = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (count == 3)
      throw UserError(fmt::format("{} {}: expected at most 3 dimensions X[,Y[,Z]]", option, text));
    if (part.empty()) throw UserError(fmt::format("{} '{}': expected X[,Y[,Z]]", option, text));
    dims[count] = uint32_t(parse_unsigned(part, option, UINT32_MAX));
    if (dims[count] == 0)
      throw UserError(fmt::format("{} {}: dimension {} is 0; every dimension must be at least 1", option, text,
                                  "xyz"[count]));
    ++count;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return dims;
}

IndexedValue parse_indexed(std::string_view text, std::string_view option) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    throw UserError(fmt::format("{} '{}': expected INDEX=VALUE", option, text));
  IndexedValue out;
  out.index = uint32_t(parse_unsigned(text.substr(0, eq), option, 1u << 20));
  out.value = std::string(text.substr(eq + 1));
  return out;
}

TypedValue parse_typed(std::string_view text, std::string_view option) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    throw UserError(fmt::format("{} '{}': expected VALUE:TYPE, e.g. 1.5:float", option, text));
  return {std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
}

}  // namespace mfagen::cli
