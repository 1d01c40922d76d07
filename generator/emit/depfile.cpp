#include "emit/depfile.h"

namespace mfagen::emit {

std::string escape_depfile_path(const std::string& path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

std::string depfile_text(const std::filesystem::path& target, const std::vector<std::filesystem::path>& deps) {
  std::string text = escape_depfile_path(target.string()) + ":";
  for (const std::filesystem::path& dep : deps) text += " " + escape_depfile_path(dep.string());
  return text + "\n";
}

}  // namespace mfagen::emit
