#include "toolchain.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mfagen::cpu {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

uint64_t fnv1a(std::string_view data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Where this shared library was loaded from: an installed mfagen
// (`cmake --install`) finds its stand-in headers and plugin next to it when
// the build-tree paths compiled in do not exist.
std::filesystem::path this_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&this_library_dir), &info) == 0 || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

std::string located(const char* env, const char* build_tree_path, const std::filesystem::path& installed_relative) {
  const std::string value = env_or(env, "");
  if (!value.empty()) return value;
  if (std::filesystem::exists(build_tree_path)) return build_tree_path;
  const std::filesystem::path installed = this_library_dir() / installed_relative;
  return std::filesystem::exists(installed) ? installed.string() : std::string(build_tree_path);
}

}  // namespace

std::string content_hash(std::string_view data) {
  return fmt::format("{:016x}{:016x}", fnv1a(data, 0xcbf29ce484222325ULL), fnv1a(data, 0x84222325cbf29ce4ULL));
}

std::filesystem::path unique_temp(const std::filesystem::path& dir, std::string_view stem,
                                  std::string_view extension) {
  static std::atomic<uint64_t> counter{0};
  return dir / fmt::format("{}.{}.{}{}", stem, getpid(), counter++, extension);
}

const Toolchain& toolchain() {
  static const Toolchain instance = [] {
    Toolchain t;
    t.clang = env_or("MFAGEN_CLANG", MFAGEN_DEFAULT_CLANG);
    t.linker = env_or("MFAGEN_LD", std::filesystem::exists(MFAGEN_DEFAULT_LD) ? MFAGEN_DEFAULT_LD : "ld");
    t.standin_dir = located("MFAGEN_STANDIN_DIR", MFAGEN_DEFAULT_STANDIN_DIR, "../share/mfagen/metal_standin/include");
    t.plugin = located("MFAGEN_INSTRUMENT_PLUGIN", MFAGEN_DEFAULT_INSTRUMENT_PLUGIN, "mfagen/mfagen_instrument.so");
    std::ifstream in(t.plugin, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    t.plugin_identity = content_hash(bytes.str());
    return t;
  }();
  return instance;
}

std::filesystem::path resolve_cache_dir(const std::filesystem::path& requested) {
  if (!requested.empty()) return requested;
  if (const char* dir = std::getenv("MFAGEN_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "mfagen";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "mfagen";
  return std::filesystem::temp_directory_path() / "mfagen-cache";
}

}  // namespace mfagen::cpu
