#include "check/checked_headers.h"

#include <deque>
#include <fstream>
#include <sstream>
#include <system_error>

namespace mfagen::check {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<fs::path> find_header(std::string_view header, bool quoted, const fs::path& includer_dir,
                                    const std::vector<fs::path>& include_dirs) {
  std::vector<fs::path> search;
  if (quoted && !includer_dir.empty()) search.push_back(includer_dir);
  search.insert(search.end(), include_dirs.begin(), include_dirs.end());
  for (const fs::path& dir : search) {
    std::error_code ec;
    const fs::path candidate = fs::absolute(dir / fs::path(std::string(header)), ec).lexically_normal();
    if (!ec && fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

LoweredTree lower_with_headers(std::string_view source, const fs::path& main_dir,
                               const std::vector<fs::path>& include_dirs) {
  LoweredTree tree;
  std::deque<fs::path> pending;  // found, not yet lowered
  // Resolves the includes of a file in `dir`, queueing the headers not seen yet.
  auto found_from = [&](const fs::path& dir) -> HeaderFound {
    return [&, dir](std::string_view header, bool quoted) {
      const std::optional<fs::path> path = find_header(header, quoted, dir, include_dirs);
      if (!path) return false;
      if (!tree.headers.contains(path->string())) {
        tree.headers[path->string()];  // reserved: each header is lowered once
        pending.push_back(*path);
      }
      return true;
    };
  };
  tree.main = lower_for_check(source, found_from(main_dir));
  while (!pending.empty()) {
    const fs::path path = pending.front();
    pending.pop_front();
    std::optional<std::string> text = read_text(path);
    CheckedHeader& header = tree.headers[path.string()];
    header.original = text.value_or("");
    header.lowered = lower_for_check(header.original, found_from(path.parent_path()));
  }
  return tree;
}

}  // namespace mfagen::check
