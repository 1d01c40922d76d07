#include "preprocessed_cache.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "toolchain.h"

namespace mfagen::cpu {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kMagic = "mfagen-preprocessed 1";

std::optional<std::string> read_whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::optional<std::string> load_preprocessed(const fs::path& entry) {
  std::optional<std::string> stored = read_whole_file(entry);
  if (!stored) return std::nullopt;
  std::string_view rest = *stored;
  auto next_line = [&rest]() -> std::optional<std::string_view> {
    size_t end = rest.find('\n');
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    return line;
  };
  if (next_line() != kMagic) return std::nullopt;
  std::optional<std::string_view> count_line = next_line();
  if (!count_line) return std::nullopt;
  size_t count = 0;
  try {
    count = std::stoul(std::string(*count_line));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (size_t i = 0; i < count; ++i) {
    std::optional<std::string_view> line = next_line();
    if (!line || line->size() < 34 || (*line)[32] != ' ') return std::nullopt;
    std::optional<std::string> content = read_whole_file(std::string(line->substr(33)));
    if (!content || content_hash(*content) != line->substr(0, 32)) return std::nullopt;
  }
  return std::string(rest);
}

void store_preprocessed(const fs::path& entry, std::string_view text, const std::vector<std::string>& files_read,
                        std::string_view source_name) {
  std::string stored = fmt::format("{}\n", kMagic);
  std::vector<std::string> dependencies;
  for (const std::string& file : files_read) {
    if (file.empty() || file.front() == '<' || file == source_name) continue;
    std::optional<std::string> content = read_whole_file(file);
    if (!content) return;  // a file that vanished meanwhile: nothing to validate a hit against
    dependencies.push_back(fmt::format("{} {}", content_hash(*content), file));
  }
  stored += fmt::format("{}\n", dependencies.size());
  for (const std::string& line : dependencies) stored += line + '\n';
  stored += text;
  const fs::path temp = unique_temp(entry.parent_path(), entry.stem().string(), ".tmp");
  {
    std::ofstream out(temp, std::ios::binary);
    out << stored;
    if (!out) {
      std::error_code ec;
      fs::remove(temp, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(temp, entry, ec);  // atomic: a concurrent store of the same key writes the same text
  if (ec) fs::remove(temp, ec);
}

}  // namespace mfagen::cpu
