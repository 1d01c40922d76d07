// `--dtype float16`, `--causal bottom_right`: a spec enum named on the
// command line (empty: not given). Shared by `run` and `profile`.
#pragma once

#include <fmt/format.h>

#include <array>
#include <optional>
#include <string>

#include "errors.h"
#include "spec/kernel_spec.h"

namespace mfagen::cli {

template <class Enum, size_t N>
std::optional<Enum> parse_choice(const std::string& text, const std::array<Enum, N>& all, const char* option) {
  if (text.empty()) return std::nullopt;
  for (Enum e : all)
    if (spec::to_string(e) == text) return e;
  throw UserError(fmt::format("{} {}: not a valid value", option, text));
}

}  // namespace mfagen::cli
