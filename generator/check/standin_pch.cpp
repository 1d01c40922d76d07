#include "check/standin_pch.h"

#include <clang/Basic/Version.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "check/digest.h"
#include "check/parse_setup.h"
#include "check/pch_builder.h"
#include "check/pch_cache_file.h"

namespace mfagen::check {
namespace {

namespace fs = std::filesystem;

// The stand-in's files, sorted by their path relative to the directory.
std::vector<fs::path> standin_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec), end;
       !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path().lexically_relative(dir));
  if (ec) return {};
  std::sort(files.begin(), files.end());
  return files;
}

// What changes when a file is edited, replaced or touched: cheap enough to
// take on every check, so that an edited stand-in is noticed at once.
std::string fingerprint(const fs::path& dir) {
  std::string out;
  for (const fs::path& file : standin_files(dir)) {
    struct stat st {};
    if (::stat((dir / file).c_str(), &st) != 0) return {};
    out += fmt::format("{}\t{}\t{}.{}\t{}.{}\t{}\n", file.string(), st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                       st.st_ctim.tv_sec, st.st_ctim.tv_nsec, st.st_ino);
  }
  return out;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(text).str();
}

// Everything the PCH's bytes depend on; empty when a stand-in file cannot be read.
std::string content_key(const fs::path& standin_dir) {
  Digest digest;
  digest.add(clang::getClangFullVersion()).add(prelude_text()).add(standin_header_text());
  for (const std::string& flag : language_flags(standin_dir)) digest.add(flag);
  const std::vector<fs::path> files = standin_files(standin_dir);
  if (files.empty()) return {};
  for (const fs::path& file : files) {
    std::optional<std::string> text = read_file(standin_dir / file);
    if (!text) return {};
    digest.add(file.generic_string()).add(*text);
  }
  return digest.hex();
}

// check-standin-DIR-KEY.pch: DIR names the stand-in directory, so that a new
// PCH of a directory replaces its older ones instead of piling up.
std::string cache_file_prefix(const fs::path& standin_dir) {
  return fmt::format("check-standin-{}-", Digest().add(standin_dir.string()).hex().substr(0, 12));
}

// Removes the cache files of `keep`'s directory other than `keep`.
void remove_older_cache_files(const fs::path& keep, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(keep.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(".pch") && it->path() != keep) fs::remove(it->path(), ec);
  }
}

std::shared_ptr<const PrecompiledStandin> load_or_build(const fs::path& standin_dir, const fs::path& cache_dir) {
  auto pch = std::make_shared<PrecompiledStandin>();
  pch->key = content_key(standin_dir);
  if (pch->key.empty()) return nullptr;
  const std::string prefix = cache_file_prefix(standin_dir);
  pch->cache_file = resolve_check_cache_dir(cache_dir) / (prefix + pch->key.substr(0, 32) + ".pch");
  if (std::optional<std::string> cached = read_pch_cache_file(pch->cache_file, pch->key)) {
    pch->bytes = std::move(*cached);
    pch->loaded_from_cache = true;
    return pch;
  }
  std::optional<std::string> built = build_standin_pch(standin_dir);
  if (!built) return nullptr;
  pch->bytes = std::move(*built);
  // A stand-in edited while clang read it gives a PCH of neither version:
  // keep it from the cache (this process notices the edit by its fingerprint).
  if (content_key(standin_dir) == pch->key) {
    write_pch_cache_file(pch->cache_file, pch_cache_file_text(pch->key, pch->bytes));
    remove_older_cache_files(pch->cache_file, prefix);
  }
  return pch;
}

struct MemoEntry {
  std::string fingerprint;                        // of the stand-in when `pch` was made
  std::shared_ptr<const PrecompiledStandin> pch;  // null: not buildable, or refused by clang
};

std::mutex memo_mutex;
std::map<std::pair<std::string, std::string>, MemoEntry> memo;  // (stand-in dir, cache dir) -> PCH

}  // namespace

std::filesystem::path resolve_check_cache_dir(const std::filesystem::path& requested) {
  if (!requested.empty()) return requested;
  if (const char* dir = std::getenv("MFAGEN_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "mfagen";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "mfagen";
  return fs::temp_directory_path() / "mfagen-cache";
}

std::shared_ptr<const PrecompiledStandin> precompiled_standin(const fs::path& standin_dir, const fs::path& cache_dir) {
  const std::string print = fingerprint(standin_dir);
  if (print.empty()) return nullptr;
  std::lock_guard lock(memo_mutex);
  MemoEntry& entry = memo[{standin_dir.string(), cache_dir.string()}];
  if (entry.fingerprint != print) {
    entry.pch = load_or_build(standin_dir, cache_dir);
    entry.fingerprint = print;
  }
  return entry.pch;
}

void reject_precompiled_standin(const PrecompiledStandin& pch) {
  std::lock_guard lock(memo_mutex);
  for (auto it = memo.begin(); it != memo.end();) {
    if (!it->second.pch || it->second.pch->key != pch.key) {
      ++it;
    } else if (it->second.pch->loaded_from_cache) {
      it = memo.erase(it);  // the next call builds afresh (the file is gone)
    } else {
      it->second.pch = nullptr;  // built here and still refused: parse the slow way
      ++it;
    }
  }
  std::error_code ec;
  fs::remove(pch.cache_file, ec);
}

void forget_precompiled_standins() {
  std::lock_guard lock(memo_mutex);
  memo.clear();
}

}  // namespace mfagen::check
