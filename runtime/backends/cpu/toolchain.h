// Where the cpu backend finds clang-16, the Metal stand-in headers and the
// instrumentation plugin, and where it caches compiled kernels.
#pragma once

#include <filesystem>
#include <string>

namespace mfagen::cpu {

struct Toolchain {
  std::string clang;                 // $MFAGEN_CLANG, else the clang-16 found at build time, else clang-16 in PATH
  std::string linker;                // $MFAGEN_LD, else the ld found at build time, else ld in PATH
  // $MFAGEN_STANDIN_DIR / $MFAGEN_INSTRUMENT_PLUGIN, else an installed copy's
  // own (next to the library: `cmake --install` or the Python wheel), else the
  // source tree's headers and the build tree's plugin (toolchain.cpp, runtime_files).
  std::filesystem::path standin_dir;
  std::filesystem::path plugin;
  std::string plugin_identity;        // content hash of the plugin (part of cache keys)
};

const Toolchain& toolchain();

// options.cache_dir, else $MFAGEN_CACHE_DIR, else $XDG_CACHE_HOME/mfagen, else ~/.cache/mfagen.
std::filesystem::path resolve_cache_dir(const std::filesystem::path& requested);

// A stable 128-bit FNV-1a digest as 32 hex digits (cache keys, not security).
std::string content_hash(std::string_view data);

// A name in `dir` no other thread or process uses (stem.PID.N.extension):
// cache files are written there, then renamed into place atomically.
std::filesystem::path unique_temp(const std::filesystem::path& dir, std::string_view stem,
                                  std::string_view extension);

}  // namespace mfagen::cpu
