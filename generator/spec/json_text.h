// JSON text -> JSON value for spec files, with errors a person can act on:
// "invalid JSON at line L, column C: <reason>". Also refuses an object that
// repeats a key: plain JSON parsers keep the last value silently, which in a
// spec would quietly drop half of what the user wrote.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace mfagen::spec::detail {

// Object keys keep their order in the file, so that "the first unknown
// field" is the first one the user wrote.
using Json = nlohmann::ordered_json;

// Throws SpecError(file, "", "invalid JSON at line L, column C: ...") for
// malformed text, and SpecError(file, <object path>, ...) for a repeated key.
Json parse_json_text(std::string_view text, const std::string& file);

}  // namespace mfagen::spec::detail
