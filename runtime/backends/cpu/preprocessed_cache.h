#pragma once
// The preprocessed text of a kernel source, cached on disk beside the
// compiled objects, as ccache's direct mode caches: keyed by everything the
// preprocessor is given (its arguments, the source's text and name) and
// validated against the content of every file it read (the stand-in's
// headers, the source's own includes), which the entry lists. A hit skips
// the `clang -E` subprocess, about 45 ms of every compile() whose object is
// already cached: the whole cost of a cached kernel in a new process (a test
// process, a Python session) before this cache.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::cpu {

// The entry's preprocessed text, when the entry exists, is well formed and
// every file it depends on still has the content it had when stored.
std::optional<std::string> load_preprocessed(const std::filesystem::path& entry);

// Stores `text` atomically at `entry`, with the content digests of
// `files_read`: the files its line markers name (LoweredSource::files).
// Pseudo-files ("<built-in>") and `source_name`, the source itself, whose
// text is part of the entry's key, are not listed. Best effort: a cache that
// cannot be written only costs the next compile its preprocessing.
void store_preprocessed(const std::filesystem::path& entry, std::string_view text,
                        const std::vector<std::string>& files_read, std::string_view source_name);

}  // namespace mfagen::cpu
