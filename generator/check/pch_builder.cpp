// build_standin_pch(): clang's own PCH writer (PCHGenerator, as
// GeneratePCHAction and PrecompiledPreamble use it) run through a
// ToolInvocation like every check, writing into memory rather than a file.
#include "check/pch_builder.h"

#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Serialization/ASTWriter.h>
#include <clang/Serialization/PCHContainerOperations.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include "check/parse_setup.h"

namespace mfagen::check {
namespace {

// A translation-unit prefix (TU_Prefix: no end-of-file work such as pending
// instantiations, which belong to the file that uses the PCH) serialized
// into `buffer`.
class PrecompileAction : public clang::ASTFrontendAction {
 public:
  explicit PrecompileAction(std::shared_ptr<clang::PCHBuffer> buffer) : buffer_(std::move(buffer)) {}

  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef) override {
    return std::make_unique<clang::PCHGenerator>(ci.getPreprocessor(), ci.getModuleCache(), /*OutputFile=*/"",
                                                 /*isysroot=*/"", buffer_, ci.getFrontendOpts().ModuleFileExtensions,
                                                 /*AllowASTWithErrors=*/false, /*IncludeTimestamps=*/false);
  }
  bool BeginSourceFileAction(clang::CompilerInstance& ci) override {
    ci.getLangOpts().CompilingPCH = true;  // as GeneratePCHAction does
    return clang::ASTFrontendAction::BeginSourceFileAction(ci);
  }
  clang::TranslationUnitKind getTranslationUnitKind() override { return clang::TU_Prefix; }
  bool hasASTFileSupport() const override { return false; }

 private:
  std::shared_ptr<clang::PCHBuffer> buffer_;
};

// Whether clang reported an error (the checks that then parse the stand-in
// per file report it in full).
class ErrorSeen : public clang::DiagnosticConsumer {
 public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level >= clang::DiagnosticsEngine::Error) seen = true;
  }
  bool seen = false;
};

}  // namespace

std::optional<std::string> build_standin_pch(const std::filesystem::path& standin_dir) {
  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  memory->addFile(kPreludePath, 0, llvm::MemoryBuffer::getMemBuffer(prelude_text(), kPreludePath));
  memory->addFile(kStandinHeaderPath, 0, llvm::MemoryBuffer::getMemBuffer(standin_header_text(), kStandinHeaderPath));
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(memory);
  auto files = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions(), overlay);

  std::vector<std::string> args = {"mfagen-check", "-fsyntax-only"};
  for (std::string& flag : language_flags(standin_dir)) args.push_back(std::move(flag));
  args.emplace_back(kStandinHeaderPath);

  auto buffer = std::make_shared<clang::PCHBuffer>();
  buffer->IsComplete = false;
  ErrorSeen errors;
  clang::tooling::ToolInvocation invocation(args, std::make_unique<PrecompileAction>(buffer), files.get());
  invocation.setDiagnosticConsumer(&errors);
  if (!invocation.run() || errors.seen || !buffer->IsComplete || buffer->Data.empty()) return std::nullopt;
  return std::string(buffer->Data.begin(), buffer->Data.end());
}

}  // namespace mfagen::check
