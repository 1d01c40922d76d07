#include "check/pch_cache_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "check/digest.h"

namespace mfagen::check {
namespace {

namespace fs = std::filesystem;

// Bump when the layout, or the way the PCH is built, changes.
constexpr std::string_view kFormat = "mfagen-check-pch 1";

std::string pch_digest(std::string_view pch) { return Digest().add(pch).hex(); }

}  // namespace

std::string pch_cache_file_text(const std::string& key, const std::string& pch) {
  return fmt::format("{}\nkey {}\ndigest {}\nsize {}\n", kFormat, key, pch_digest(pch), pch.size()) + pch;
}

std::optional<std::string> read_pch_cache_file(const fs::path& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return std::nullopt;
  const std::string text = std::move(buffer).str();
  std::string_view rest = text;
  auto line = [&]() -> std::string_view {
    size_t end = rest.find('\n');
    if (end == std::string_view::npos) return {};
    std::string_view out = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    return out;
  };
  const std::string_view format = line(), key_line = line(), digest = line(), size = line();
  if (format != kFormat || key_line != "key " + key || size != fmt::format("size {}", rest.size()) ||
      digest != "digest " + pch_digest(rest))
    return std::nullopt;
  return std::string(rest);
}

void write_pch_cache_file(const fs::path& path, const std::string& text) {
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path temp = path.parent_path() / fmt::format("{}.{}.{}.tmp", path.filename().string(), getpid(), counter++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      fs::remove(temp, ec);
      return;
    }
  }
  fs::rename(temp, path, ec);
  if (ec) fs::remove(temp, ec);
}

}  // namespace mfagen::check
