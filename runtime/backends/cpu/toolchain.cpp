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

// Where this shared library was loaded from (absolute, as the dynamic loader
// resolved it: through the extension's $ORIGIN RUNPATH in the wheel).
std::filesystem::path this_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&this_library_dir), &info) == 0 || !info.dli_fname) return {};
  std::error_code error;
  const std::filesystem::path file = std::filesystem::weakly_canonical(info.dli_fname, error);
  return (error ? std::filesystem::path(info.dli_fname) : file).parent_path();
}

// A program the cpu backend runs: $ENV, else the one found at build time,
// else `name` in PATH (an installed copy on a machine where it lives elsewhere).
std::string program(const char* env, const char* found_at_build, const char* name) {
  return env_or(env, std::filesystem::exists(found_at_build) ? found_at_build : name);
}

// The run-time files the cpu backend needs besides clang: the Metal stand-in
// headers every kernel includes and the instrumentation plugin clang loads.
struct RuntimeFiles {
  std::filesystem::path standin_dir;
  std::filesystem::path plugin;
};

// The one place that decides where the run-time files are. In order:
//  1. $MFAGEN_STANDIN_DIR and $MFAGEN_INSTRUMENT_PLUGIN, each when set;
//  2. next to this library, when it is an installed copy that carries them,
//     in either layout it is shipped in (paths relative to its directory):
//     - `cmake --install` (cmake/install.cmake): lib/libmfagen_cpu_backend.so,
//       share/mfagen/metal_standin/include, lib/mfagen/mfagen_instrument.so;
//     - the Python wheel (python/CMakeLists.txt, component mfagen_python):
//       mfagen/libmfagen_cpu_backend.so, mfagen/metal_standin/include,
//       mfagen/mfagen_instrument.so;
//  3. the source-tree and build-tree paths compiled in (the library in its
//     build tree, where 2 finds nothing).
// An installed copy takes its own files before the compiled-in ones, and
// both from the same layout: the trees it was built from may be gone or
// moved (an installed wheel must keep working), or still there and edited
// since, whose headers and plugin then need not match this library.
RuntimeFiles runtime_files() {
  RuntimeFiles files{MFAGEN_DEFAULT_STANDIN_DIR, MFAGEN_DEFAULT_INSTRUMENT_PLUGIN};
  struct Layout {
    const char* standin_dir;
    const char* plugin;
  };
  static constexpr Layout kInstalled[] = {{"../share/mfagen/metal_standin/include", "mfagen/mfagen_instrument.so"},
                                          {"metal_standin/include", "mfagen_instrument.so"}};
  const std::filesystem::path here = this_library_dir();
  if (!here.empty()) {
    for (const Layout& layout : kInstalled) {
      std::error_code error;
      if (std::filesystem::is_directory(here / layout.standin_dir, error) &&
          std::filesystem::is_regular_file(here / layout.plugin, error)) {
        files = {(here / layout.standin_dir).lexically_normal(), (here / layout.plugin).lexically_normal()};
        break;
      }
    }
  }
  if (std::string value = env_or("MFAGEN_STANDIN_DIR", ""); !value.empty()) files.standin_dir = value;
  if (std::string value = env_or("MFAGEN_INSTRUMENT_PLUGIN", ""); !value.empty()) files.plugin = value;
  return files;
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
    t.clang = program("MFAGEN_CLANG", MFAGEN_DEFAULT_CLANG, "clang-16");
    t.linker = program("MFAGEN_LD", MFAGEN_DEFAULT_LD, "ld");
    RuntimeFiles files = runtime_files();
    t.standin_dir = std::move(files.standin_dir);
    t.plugin = std::move(files.plugin);
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
