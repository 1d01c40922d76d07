// compile(): preprocess with clang -E, lower (msl_lowering), then build a
// shared object with clang-16 in C++ for OpenCL mode (address spaces are real
// clang address spaces), cached on disk by the hash of the lowered text.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>

#include "diagnostic_repair.h"
#include "loaded_module.h"
#include "msl_lowering.h"
#include "preprocessed_cache.h"
#include "subprocess.h"
#include "toolchain.h"
#include "unroll_hints.h"

namespace mfagen::cpu {
namespace {

namespace fs = std::filesystem;

// An exclusive advisory lock (flock) on a file beside the cache entry, held
// for the object's lifetime. Without a lock file (read-only cache) it holds
// nothing: the atomic rename still keeps concurrent compiles correct.
class CacheKeyLock {
 public:
  explicit CacheKeyLock(const fs::path& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~CacheKeyLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  CacheKeyLock(const CacheKeyLock&) = delete;
  CacheKeyLock& operator=(const CacheKeyLock&) = delete;

 private:
  int fd_;
};


// -Wno-invalid-constexpr: a constexpr function that can never be constant
// (MLX's `static constexpr void mma(...)` with reinterpret_cast) is ill-formed
// with no diagnostic required; Metal's compiler accepts it, clang errs.
const std::vector<std::string> kLanguageFlags = {"-x", "clcpp", "-cl-std=clc++2021", "-cl-no-stdinc",
                                                 "-target", "x86_64-unknown-linux-gnu", "-Wno-invalid-constexpr"};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompileError(fmt::format("error: cannot read '{}'", path.string()));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// clang speaks OpenCL; users wrote Metal. Name address spaces their way.
std::string metal_spelling(std::string message) {
  for (auto [from, to] : {std::pair{"__global ", "device "}, {"__local ", "threadgroup "}, {"__constant ", "constant "},
                          {"__private ", "thread "}, {"__generic ", ""}})
    replace_all(message, from, to);
  return message;
}

// Everything of the preprocess command but its file names (also part of the
// key of its cached output, preprocessed_cache.h).
std::vector<std::string> preprocess_flags(const CompileOptions& options) {
  const Toolchain& tc = toolchain();
  std::vector<std::string> flags = kLanguageFlags;
  // Macros in pragma arguments are expanded, as the compile of a pragma does
  // (ggml's `#pragma unroll (MIN(DK8/2, 4*NSG))`, MIN a macro of the file):
  // clang's loop-hint pragma reads its argument through the preprocessor,
  // so Apple's compiler expands it, but `clang -E` prints pragmas it does not
  // know verbatim, and the macro no longer exists when the output is compiled.
  // -fms-extensions makes -E expand macros in every pragma it prints (clang's
  // PrintPreprocessedOutput); it adds two predefined macros
  // (_NATIVE_WCHAR_T_DEFINED, _WCHAR_T_DEFINED) and no other change to the
  // preprocessed text, and the compile itself does not take it.
  flags.push_back("-fms-extensions");
  flags.insert(flags.end(), {"-isystem", tc.standin_dir.string(), "-include", "mfagen_standin/abi.h"});
  for (const std::string& dir : options.include_dirs) flags.insert(flags.end(), {"-I", dir});
  for (const std::string& define : options.defines) flags.push_back("-D" + define);
  return flags;
}

std::string preprocess(const fs::path& file, const std::vector<std::string>& flags, const fs::path& scratch_dir) {
  const Toolchain& tc = toolchain();
  fs::path output = unique_temp(scratch_dir, "pre", ".ii");
  std::vector<std::string> argv = {tc.clang, "-E"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {file.string(), "-o", output.string()});
  ProcessResult result = run_process(argv);
  if (result.exit_code != 0) {
    fs::remove(output);
    throw CompileError(result.output);
  }
  std::string text = read_file(output);
  fs::remove(output);
  return text;
}

// Everything of the build command but its file names (also part of the cache key).
// Profiling compiles are -O2: the counting pass runs inside -O2's pipeline,
// and its counts are calibrated against what that pipeline leaves
// (docs/profile.md). Every other compile is -O1: it builds a kernel about
// five times faster (x86 code generation of -O2's unrolled code dominated the
// test suite's time), runs the kernels at much the same speed, and computes
// the same bits (no fast-math at either level; fmuladd is contracted in the
// front end, before any optimization).
std::vector<std::string> build_flags(bool profile) {
  const Toolchain& tc = toolchain();
  std::vector<std::string> flags = kLanguageFlags;
  // -fstack-clash-protection: a frame larger than a page touches each page
  // in order, so a thread's stack overflow hits its guard page
  // (threadgroup_runner.cpp) rather than another thread's stack.
  flags.insert(flags.end(), {"-Xclang", "-ffake-address-space-map", profile ? "-O2" : "-O1", "-gline-tables-only",
                             "-fPIC", "-c", "-w", "-fstack-clash-protection"});
  // Always: uninstrumented modules still need its alignment relaxation.
  flags.push_back("-fpass-plugin=" + tc.plugin.string());
  return flags;
}

// The link of a kernel module, called directly rather than through clang's
// driver: `clang -shared` took 0.41 s for an empty module against 0.13 s for
// its compile and 0.01 s for this command (the driver starts a second clang
// and links the C++ runtime's start files and libraries, which a module
// neither has nor needs). A module needs only what its code calls: libm
// (exp2f, fmaf), libgcc_s (half conversions) and libc; named by soname so
// that no development files are needed. No start files: a module has no
// constructors to run but those of .init_array, which the dynamic loader runs.
std::vector<std::string> link_flags() {
  return {"-shared", "--hash-style=gnu", "--build-id", "--eh-frame-hdr", "-m", "elf_x86_64",
          "--no-as-needed", "-l:libm.so.6", "-l:libgcc_s.so.1", "-l:libc.so.6"};
}

ProcessResult link_shared_object(const fs::path& object_file, const fs::path& shared_object) {
  std::vector<std::string> argv = {toolchain().linker, object_file.string(), "-o", shared_object.string()};
  for (std::string& flag : link_flags()) argv.push_back(std::move(flag));
  return run_process(argv);
}

void build_shared_object(const std::string& lowered, bool profile, const fs::path& object, const fs::path& dir) {
  const Toolchain& tc = toolchain();
  fs::path source = unique_temp(dir, object.stem().string(), ".cl");
  fs::path temp_object_file = unique_temp(dir, object.stem().string(), ".o");
  fs::path temp_object = unique_temp(dir, object.stem().string(), ".so");
  std::ofstream(source, std::ios::binary) << lowered;
  std::vector<std::string> argv = {tc.clang};
  for (std::string& flag : build_flags(profile)) argv.push_back(std::move(flag));
  argv.insert(argv.end(), {"-o", temp_object_file.string(), source.string()});
  ProcessResult result = run_process(argv);
  if (result.exit_code != 0) {
    // Valid MSL that only clang's type checker rejects (diagnostic_repair.h).
    std::vector<std::string> syntax_flags = kLanguageFlags;
    syntax_flags.insert(syntax_flags.end(), {"-Xclang", "-ffake-address-space-map"});
    std::optional<std::string> repaired =
        repair_from_diagnostics(lowered, syntax_flags, unique_temp(dir, "repair", ".cl").string());
    if (repaired) {
      std::ofstream(source, std::ios::binary | std::ios::trunc) << *repaired;
      ProcessResult retried = run_process(argv);
      if (retried.exit_code == 0) result = retried;
    }
  }
  fs::remove(source);
  if (result.exit_code == 0) {
    result = link_shared_object(temp_object_file, temp_object);
    if (result.exit_code != 0) result.output = "error: cannot link the compiled kernel module:\n" + result.output;
  }
  fs::remove(temp_object_file);
  if (result.exit_code != 0) {
    fs::remove(temp_object);
    throw CompileError(metal_spelling(result.output));
  }
  fs::rename(temp_object, object);  // atomic: concurrent compiles of one key are harmless
}

bool is_true_literal(const std::string& literal) {
  return literal != "false" && literal != "0" && literal != "0.0f" && literal != "0.0h";
}

}  // namespace

std::shared_ptr<const Module> compile_file(const fs::path& file, const CompileOptions& options, CompileStats* stats) {
  return compile(read_file(file), file.string(), options, stats);
}

std::shared_ptr<const Module> compile(std::string_view source, std::string_view source_name,
                                      const CompileOptions& options, CompileStats* stats) {
  auto start = std::chrono::steady_clock::now();
  fs::path cache = resolve_cache_dir(options.cache_dir);
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) throw CompileError(fmt::format("error: cannot create kernel cache '{}': {}", cache.string(), ec.message()));

  // Preprocess a private copy so that in-memory sources work; includes
  // relative to the named file still resolve through -iquote.
  CompileOptions with_dir = options;
  // Profiling compiles turn the stand-in's op markers on (profile_markers.h).
  if (options.profile) with_dir.defines.push_back("__MF_PROFILE=1");
  fs::path named(source_name);
  if (named.has_parent_path()) with_dir.include_dirs.push_back(named.parent_path().string());
  const Toolchain& tc = toolchain();
  const std::vector<std::string> pre_flags = preprocess_flags(with_dir);
  const fs::path pre_entry =
      cache / (content_hash(fmt::format("pre|{}|{}|{}|{}", tc.clang, fmt::join(pre_flags, " "), source_name, source)) +
               ".ii");
  std::optional<std::string> cached_text = load_preprocessed(pre_entry);
  const bool preprocess_hit = cached_text.has_value();
  std::string preprocessed = cached_text ? std::move(*cached_text) : std::string();
  if (!preprocess_hit) {
    fs::path copy = unique_temp(cache, "src", ".metal");
    std::ofstream(copy, std::ios::binary) << source;
    try {
      preprocessed = preprocess(copy, pre_flags, cache);
    } catch (CompileError& e) {
      fs::remove(copy);
      std::string message = e.what();
      replace_all(message, copy.string(), source_name);
      throw CompileError(message);
    }
    fs::remove(copy);
    replace_all(preprocessed, "\"" + copy.string() + "\"", fmt::format("\"{}\"", source_name));
  }

  LoweredSource lowered = lower_msl(preprocessed, options.constants);
  // Stored once the lowering has read the files its line markers name.
  if (!preprocess_hit) store_preprocessed(pre_entry, preprocessed, lowered.files, source_name);
  // Unrolling hints only cost compile time here (unroll_hints.h); a profile
  // counts the unrolled loops the GPU runs, so it keeps them.
  if (!options.profile) drop_unroll_hints(lowered.text);
  const bool instrument = options.instrument || options.profile;  // profiles count device bytes too
  // Tells the plugin to relax vector alignment only (MemAccessInstrument.cpp).
  if (!instrument)
    lowered.text += "\nextern \"C\" __attribute__((used)) const __constant int __mf_alignment_only = 1;\n";
  // Tells the plugin to count ops per block (instrument/ProfileCounters.cpp).
  if (options.profile)
    lowered.text += "\nextern \"C\" __attribute__((used)) const __constant int __mf_profile_mode = 1;\n";
  std::string flags;
  for (const std::string& flag : build_flags(options.profile)) flags += flag + ' ';
  flags += tc.linker + ' ';
  for (const std::string& flag : link_flags()) flags += flag + ' ';
  std::string key = content_hash(fmt::format("abi{}|{}|{}|{}|{}", abi::kAbiVersion, tc.clang, flags,
                                             tc.plugin_identity, lowered.text));
  fs::path object = cache / (key + ".so");
  bool hit = fs::exists(object);
  if (!hit) {
    // One compile per key across processes: test processes and Python
    // sessions that want the same kernel at once wait for the first one's
    // object instead of compiling it again (the rename below keeps a
    // concurrent compile harmless without the lock; the lock saves the work).
    const CacheKeyLock lock(cache / (key + ".lock"));
    hit = fs::exists(object);
    if (!hit) build_shared_object(lowered.text, options.profile, object, cache);
  }

  void* handle = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw CompileError(fmt::format("error: cannot load compiled kernel module: {}", dlerror()));
  std::vector<std::string> constants_true;
  for (const FunctionConstant& c : lowered.function_constants) {
    auto given = options.constants.find(c.index);
    if (given != options.constants.end() && is_true_literal(given->second.literal)) constants_true.push_back(c.name);
  }
  auto module = std::make_shared<LoadedModule>(handle, std::move(lowered.kernels), std::move(lowered.function_constants),
                                               std::move(constants_true), instrument);
  for (const KernelSignature& k : module->kernels())
    if (!module->entry(k.name))
      throw CompileError(fmt::format("error: kernel '{}' has no entry point in the compiled module", k.name));
  if (stats) {
    stats->cache_hit = hit;
    stats->preprocess_hit = preprocess_hit;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return module;
}

}  // namespace mfagen::cpu
