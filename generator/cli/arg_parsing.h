// Parsers for the structured option values of the CLI ("4,2,1",
// "INDEX=VALUE"). They throw UserError naming the option and the bad text,
// so every subcommand reports malformed values the same way.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "errors.h"

namespace mfagen::cli {

// A non-negative decimal integer (no sign, no spaces) that fits in `max`.
uint64_t parse_unsigned(std::string_view text, std::string_view option, uint64_t max = UINT64_MAX);

// "X[,Y[,Z]]" with every dimension >= 1; missing dimensions are 1.
std::array<uint32_t, 3> parse_dim3(std::string_view text, std::string_view option);

// "INDEX=VALUE" with INDEX a small non-negative integer and VALUE non-empty.
struct IndexedValue {
  uint32_t index = 0;
  std::string value;
};
IndexedValue parse_indexed(std::string_view text, std::string_view option);

// "VALUE:TYPE", split at the last ':'.
struct TypedValue {
  std::string value;
  std::string type;
};
TypedValue parse_typed(std::string_view text, std::string_view option);

}  // namespace mfagen::cli
