// A private scratch directory that lives as long as its owner: commands that
// need files only for the duration of a call (the kernels `mfagen run`,
// `selftest` and `bench` generate so that any backend can read them) make
// one, and it is removed with everything in it when the owner goes away.
#pragma once

#include <filesystem>
#include <string_view>

namespace mfagen::io {

class TempDirectory {
 public:
  // Creates <system temp dir>/<prefix>XXXXXX with mode 0700 (mkdtemp: unique,
  // never an existing directory). Throws std::system_error naming the path.
  explicit TempDirectory(std::string_view prefix);
  ~TempDirectory();  // removes the directory tree; errors are ignored
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace mfagen::io
