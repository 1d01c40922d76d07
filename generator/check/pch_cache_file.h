// The cache file of a precompiled stand-in (standin_pch.h): four header
// lines, then the PCH as clang wrote it.
//   mfagen-check-pch 1
//   key <hex digest of what the PCH depends on>
//   digest <hex BLAKE3 of the PCH>
//   size <bytes of the PCH>
// A file is trusted only when its key is the one asked for and its bytes
// match their size and digest; anything else (truncated, corrupt, another
// key's or another format's file) reads as no file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mfagen::check {

std::string pch_cache_file_text(const std::string& key, const std::string& pch);

// The PCH of a cache file that passes the checks above; nothing otherwise.
std::optional<std::string> read_pch_cache_file(const std::filesystem::path& path, const std::string& key);

// Writes to a temporary file in the same directory and renames it over
// `path`, so that a concurrent reader sees a whole file or none. A cache
// that cannot be written costs the next process a build, nothing else:
// failures are ignored.
void write_pch_cache_file(const std::filesystem::path& path, const std::string& text);

}  // namespace mfagen::check
