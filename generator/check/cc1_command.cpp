// The driver runs once per (flags, working directory) on a placeholder input;
// each check then gets that -cc1 line with its own input path and
// -main-file-name in the placeholder's places.
#include "check/cc1_command.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

namespace mfagen::check {
namespace {

constexpr const char* kProgram = "mfagen-check";
constexpr const char* kPlaceholderName = "__mfagen_check_input__.metal";
constexpr const char* kPlaceholderPath = "/mfagen-check/__mfagen_check_input__.metal";

// The driver's -cc1 arguments (from "-cc1" on) for the placeholder input, as
// ToolInvocation's own driver would make them.
std::optional<std::vector<std::string>> driver_cc1(const std::vector<std::string>& driver_flags) {
  std::vector<const char*> argv = {kProgram};
  for (const std::string& flag : driver_flags) argv.push_back(flag.c_str());
  argv.push_back(kPlaceholderPath);
  clang::IgnoringDiagConsumer ignore;
  clang::DiagnosticsEngine diagnostics(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(),
                                       llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>(), &ignore,
                                       /*ShouldOwnClient=*/false);
  clang::driver::Driver driver(kProgram, llvm::sys::getDefaultTargetTriple(), diagnostics, "clang LLVM compiler",
                               llvm::vfs::getRealFileSystem());
  driver.setTitle("clang_based_tool");
  driver.setCheckInputsExist(false);  // the input lives in the check's in-memory file system
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(argv));
  if (!compilation || diagnostics.hasErrorOccurred()) return std::nullopt;
  const llvm::opt::ArgStringList* cc1 = clang::tooling::getCC1Arguments(&diagnostics, compilation.get());
  if (!cc1 || diagnostics.hasErrorOccurred()) return std::nullopt;
  return std::vector<std::string>(cc1->begin(), cc1->end());
}

std::mutex cache_mutex;
// (flags, working directory) -> -cc1 arguments; nullopt: the driver failed.
std::map<std::pair<std::vector<std::string>, std::string>, std::optional<std::vector<std::string>>> cache;

}  // namespace

std::vector<std::string> cc1_command_line(const std::vector<std::string>& driver_flags, const std::string& main_path) {
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();  // the driver records it
  std::optional<std::vector<std::string>> cc1;
  {
    std::lock_guard lock(cache_mutex);
    auto [it, inserted] = cache.try_emplace({driver_flags, cwd});
    if (inserted) it->second = driver_cc1(driver_flags);
    cc1 = it->second;
  }
  if (!cc1) return {};
  const std::string main_name = llvm::sys::path::filename(main_path).str();
  std::vector<std::string> out = {kProgram};
  for (const std::string& arg : *cc1)
    out.push_back(arg == kPlaceholderPath ? main_path : arg == kPlaceholderName ? main_name : arg);
  return out;
}

}  // namespace mfagen::check
