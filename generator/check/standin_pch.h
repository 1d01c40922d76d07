// The Metal stand-in parsed once: a clang precompiled header (PCH) of the
// prelude and <metal_stdlib> (parse_setup.h), shared by every check of a
// process and kept across processes in a cache file. Parsing the stand-in is
// most of a check's time; with the PCH a check parses only its own file.
//
// Never stale: the PCH is keyed by a digest of everything its bytes depend
// on (every file of the stand-in directory by content, the directory's path,
// the clang version, the parse flags, the prelude), and the key is computed
// again whenever a stand-in file's size, times or inode change.
// Never trusted blindly: a cache file carries its key and a digest of the
// PCH; a file that does not match is rebuilt and replaced (written to a
// temporary file and renamed, so concurrent processes see a whole file or
// none). A stand-in directory keeps one cache file: a new PCH of it
// removes the older ones.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

namespace mfagen::check {

struct PrecompiledStandin {
  std::string key;                   // hex digest of what the PCH depends on
  std::string bytes;                 // the PCH, as clang wrote it
  std::filesystem::path cache_file;  // where it is kept across processes
  bool loaded_from_cache = false;    // read from cache_file (verified) rather than built by this process
};

// The PCH of the stand-in in `standin_dir`, from memory, else from its cache
// file in `cache_dir` (empty: resolve_check_cache_dir), else built and
// stored. nullptr when clang cannot precompile the stand-in (checks then
// parse it per file). Thread-safe; the first caller of a key builds it and
// the others wait for it.
std::shared_ptr<const PrecompiledStandin> precompiled_standin(const std::filesystem::path& standin_dir,
                                                              const std::filesystem::path& cache_dir = {});

// clang refused `pch` in a check (it did not load, or its inputs changed
// under it): it is not offered again, and a cache file it came from is
// removed so that the next process builds afresh.
void reject_precompiled_standin(const PrecompiledStandin& pch);

// Drops the PCHs kept in memory, so the next call reads the cache file or
// builds (for tests; a process never needs it).
void forget_precompiled_standins();

// `requested`, else $MFAGEN_CACHE_DIR, else $XDG_CACHE_HOME/mfagen, else
// ~/.cache/mfagen: the cpu backend's kernel cache directory.
std::filesystem::path resolve_check_cache_dir(const std::filesystem::path& requested);

}  // namespace mfagen::check
