// Whole-file reads for the commands that take other people's files (specs,
// manifests, MSL): a path that is missing, unreadable or a directory is a
// clear error naming it, never a stream exception.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace mfagen::io {

// The reason a file could not be read, e.g. "cannot read the file: Is a directory".
struct ReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The file's bytes; throws ReadError("PATH: cannot read the file: REASON").
std::string read_text_file(const std::filesystem::path& path);

}  // namespace mfagen::io
