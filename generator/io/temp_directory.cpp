#include "io/temp_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace mfagen::io {

TempDirectory::TempDirectory(std::string_view prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / prefix).string() + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "cannot create a temporary directory " + pattern);
  path_ = pattern;
}

TempDirectory::~TempDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace mfagen::io
