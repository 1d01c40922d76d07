#include "io/text_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace mfagen::io {

std::string read_text_file(const std::filesystem::path& path) {
  auto fail = [&](int err) -> std::string {
    throw ReadError(fmt::format("{}: cannot read the file: {}", path.string(), std::strerror(err)));
  };
  // fopen succeeds on a directory; its first read fails with EISDIR.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return fail(errno);
  std::string text;
  char buffer[65536];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) return fail(errno ? errno : EIO);
  return text;
}

}  // namespace mfagen::io
