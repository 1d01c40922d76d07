// Precompiling the Metal stand-in with clang, in memory: the parse of
// standin_header_text() (the prelude and <metal_stdlib>) written as a clang
// precompiled header, which a check then loads instead of parsing the
// stand-in again (parse_setup.h, standin_pch.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mfagen::check {

// Precompiles the stand-in of `standin_dir` for a parse with
// language_flags(standin_dir); nothing when clang reports an error (the
// checks then parse the stand-in per file, and report it). File timestamps
// are left out of the PCH (clang then validates its inputs by size only),
// because the cache key is the headers' content (standin_pch.h).
std::optional<std::string> build_standin_pch(const std::filesystem::path& standin_dir);

}  // namespace mfagen::check
