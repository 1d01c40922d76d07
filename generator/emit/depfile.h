// A Make/Ninja depfile naming the spec files a manifest was generated from,
// so a build reruns `mfagen generate` when any of them changes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mfagen::emit {

// A path as one word of a depfile: spaces and '#' are backslash-escaped and
// '$' is doubled, as both Make and Ninja read them.
std::string escape_depfile_path(const std::string& path);

// "<target>: <dep> <dep>...\n" with every path escaped.
std::string depfile_text(const std::filesystem::path& target, const std::vector<std::filesystem::path>& deps);

}  // namespace mfagen::emit
