// check_msl(): lower (lowering.h), parse in-process with clang (libtooling's
// ToolInvocation over an in-memory file; the stand-in precompiled once,
// standin_pch.h, when the file starts by including it), run the AST rules
// (matchers.h) and the signature extraction (signatures.h), and report
// everything located in the original MSL.
#include "check/check.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/Basic/DiagnosticParse.h>
#include <clang/Basic/DiagnosticSema.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/Tooling.h>
#include <fmt/format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "check/ast_support.h"
#include "check/cc1_command.h"
#include "check/checked_headers.h"
#include "check/lowering.h"
#include "check/matchers.h"
#include "check/parse_setup.h"
#include "check/rules.h"
#include "check/signatures.h"
#include "check/standin_pch.h"
#include "check/tensor_rules.h"

#ifndef MFAGEN_CHECK_STANDIN_DIR
#define MFAGEN_CHECK_STANDIN_DIR ""
#endif

namespace mfagen::check {
namespace {

// clang errors of the host dialect that are Metal rules as well.
std::string_view rule_of_clang_diagnostic(unsigned id) {
  switch (id) {
    case clang::diag::err_exceptions_disabled: return rules::kExceptions;
    case clang::diag::err_openclcxx_not_supported: return rules::kDynamicAllocation;  // 'default new/delete'
    case clang::diag::err_expected_kernel_void_return_type: return rules::kKernelReturnType;
    default: return rules::kCompileError;
  }
}

// The message of a clang error that is a Metal rule, in Metal's terms.
std::string rule_message(unsigned id, std::string clang_text) {
  switch (id) {
    case clang::diag::err_exceptions_disabled: {
      std::string keyword = clang_text.find("'try'") != std::string::npos ? "try" : "throw";
      return fmt::format("'{}' is not allowed in Metal (no exceptions)", keyword);
    }
    case clang::diag::err_openclcxx_not_supported:
      if (clang_text.find("delete") != std::string::npos) return "'delete' is not allowed in Metal (no dynamic allocation)";
      if (clang_text.find("new") != std::string::npos) return "'new' is not allowed in Metal (no dynamic allocation)";
      return clang_text;
    case clang::diag::err_expected_kernel_void_return_type: return "a kernel must return void";
    default: return clang_text;
  }
}

// Where things are in the original MSL.
class Locator {
 public:
  Locator(std::string_view original, const LoweredMsl& lowered, std::string file,
          const CheckedHeaders* headers = nullptr)
      : original_(original), lowered_(lowered), file_(std::move(file)), headers_(headers) {
    for (size_t i = 0; i < original.size(); ++i)
      if (original[i] == '\n') line_starts_.push_back(i + 1);
  }

  LineColumn at_original(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    unsigned line = static_cast<unsigned>(it - line_starts_.begin());  // line_starts_[0] == 0
    return {line, static_cast<unsigned>(offset - line_starts_[line - 1] + 1)};
  }

  // File, line, column of a clang location (the main file maps back through the lowering).
  Diagnostic locate(const clang::SourceManager& sm, clang::SourceLocation loc) const {
    Diagnostic d;
    d.file = file_;
    if (loc.isInvalid()) return d;
    clang::SourceLocation spelled = sm.getExpansionLoc(loc);
    auto [fid, offset] = sm.getDecomposedLoc(spelled);
    if (fid == sm.getMainFileID()) {
      size_t original = lowered_.origin[std::min<size_t>(offset, lowered_.origin.size() - 1)];
      LineColumn lc = at_original(original);
      d.line = lc.line;
      d.column = lc.column;
      return d;
    }
    // One of the file's own headers maps back through its lowering too.
    if (const CheckedHeader* header = checked_header(sm, fid)) {
      const size_t original = header->lowered.origin[std::min<size_t>(offset, header->lowered.origin.size() - 1)];
      const LineColumn lc = line_column(header->original, original);
      d.file = std::filesystem::path(std::string(sm.getFileEntryRefForID(fid)->getName())).lexically_normal().string();
      d.line = lc.line;
      d.column = lc.column;
      return d;
    }
    clang::PresumedLoc p = sm.getPresumedLoc(spelled);
    if (p.isValid()) {
      d.file = p.getFilename();
      d.line = p.getLine();
      d.column = p.getColumn();
    }
    return d;
  }

  bool in_main(const clang::SourceManager& sm, clang::SourceLocation loc) const {
    return loc.isValid() && sm.getFileID(sm.getExpansionLoc(loc)) == sm.getMainFileID();
  }

  // The checked file a location is in: "" for the file, a header's path for
  // one of its own headers, nullopt elsewhere (the stand-in, the prelude).
  std::optional<std::string> checked_file(const clang::SourceManager& sm, clang::SourceLocation loc) const {
    if (loc.isInvalid()) return std::nullopt;
    const clang::FileID fid = sm.getFileID(sm.getExpansionLoc(loc));
    if (fid == sm.getMainFileID()) return "";
    if (checked_header(sm, fid))
      return std::filesystem::path(std::string(sm.getFileEntryRefForID(fid)->getName())).lexically_normal().string();
    return std::nullopt;
  }

  // The lowered text of a checked file ("" the file itself).
  const std::string& lowered_text(const std::string& file) const {
    if (file.empty() || !headers_) return lowered_.text;
    auto it = headers_->find(file);
    return it == headers_->end() ? lowered_.text : it->second.lowered.text;
  }

  const std::string& file() const { return file_; }

 private:
  const CheckedHeader* checked_header(const clang::SourceManager& sm, clang::FileID fid) const {
    if (!headers_ || headers_->empty()) return nullptr;
    const clang::OptionalFileEntryRef entry = sm.getFileEntryRefForID(fid);
    if (!entry) return nullptr;
    auto it = headers_->find(std::filesystem::path(std::string(entry->getName())).lexically_normal().string());
    return it == headers_->end() ? nullptr : &it->second;
  }

  std::string_view original_;
  const LoweredMsl& lowered_;
  std::string file_;
  const CheckedHeaders* headers_;
  std::vector<size_t> line_starts_ = {0};
};

// Text inserted into the lowered file at `offset` to repair valid Metal that
// clang rejects (with_valid_metal_repaired).
struct Insertion {
  size_t offset = 0;
  std::string text;
  bool opens = true;  // at one offset, closers end what precedes
  std::string file;   // "" for the checked file, else one of its own headers (CheckedHeaders' key)
  bool operator==(const Insertion&) const = default;
};

class CollectingDiagnostics : public clang::DiagnosticConsumer {
 public:
  CollectingDiagnostics(const Locator& locator, std::vector<Diagnostic>& out) : locator_(locator), out_(out) {}

  void BeginSourceFile(const clang::LangOptions& options, const clang::Preprocessor* pp) override {
    clang::DiagnosticConsumer::BeginSourceFile(options, pp);
    lang_options_ = &options;
  }

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    if (level == clang::DiagnosticsEngine::Note) {
      if (last_error_ && is_braced_list_for_a_vector(info) && !info.getRanges().empty()) {
        const clang::SourceManager& sm = info.getSourceManager();
        const clang::SourceLocation at = info.getRanges()[0].getBegin();
        if (std::optional<std::string> file = locator_.checked_file(sm, at))
          repairs_.push_back({sm.getFileOffset(sm.getExpansionLoc(at)), "__mf_braced_vector", true, *file});
      }
      // The why of the last error ("candidate function not viable: cannot
      // pass pointer to address space 'threadgroup' ..."), when it is in the
      // checked file.
      if (last_error_ && notes_ < 2 && info.hasSourceManager() &&
          locator_.in_main(info.getSourceManager(), info.getLocation())) {
        Diagnostic at = locator_.locate(info.getSourceManager(), info.getLocation());
        out_[*last_error_].message +=
            fmt::format(" (note: {}:{}: {})", at.line, at.column, metal_spelling(std::string(text.str())));
        ++notes_;
      }
      return;
    }
    if (level < clang::DiagnosticsEngine::Error) {
      last_error_.reset();
      return;
    }
    if (is_valid_metal_clang_rejects(info, text.str())) {
      last_error_.reset();
      ++accepted_errors_;
      return;
    }
    // The driver's, the frontend's and the PCH reader's errors are about the
    // parse's setup, never about the checked source (the "common" ones
    // before them may be either).
    if (info.getID() >= clang::diag::DIAG_START_DRIVER && info.getID() < clang::diag::DIAG_START_LEX)
      setup_failed_ = true;
    collect_operand_repairs(info);
    Diagnostic d;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      d = locator_.locate(info.getSourceManager(), info.getLocation());
    } else {
      d.file = locator_.file();
    }
    d.rule = std::string(rule_of_clang_diagnostic(info.getID()));
    d.message = rule_message(info.getID(), metal_spelling(std::string(text.str())));
    out_.push_back(std::move(d));
    last_error_ = out_.size() - 1;
    notes_ = 0;
  }

  bool setup_failed() const { return setup_failed_; }
  // Insertions that repair the valid Metal clang rejected in this parse.
  const std::vector<Insertion>& repairs() const { return repairs_; }
  // clang errors on valid Metal that the checker does not report.
  int accepted_errors() const { return accepted_errors_; }

 private:
  // `f({a, b, c})` with a vector parameter (MLX's copy and binary kernels):
  // Metal list-initializes the parameter; clang-16 finds no viable candidate
  // and says, in a note, that it cannot convert the initializer list to the
  // vector. check_msl repairs these lists as the cpu backend does
  // (runtime/backends/cpu/diagnostic_repair.h).
  static bool is_braced_list_for_a_vector(const clang::Diagnostic& info) {
    if (info.getID() != clang::diag::note_ovl_candidate_bad_list_argument || info.getNumArgs() <= 7) return false;
    // %select{cannot convert initializer list|too few ...|too many ...}7
    const auto kind = info.getArgKind(7);
    if ((kind != clang::DiagnosticsEngine::ak_sint && kind != clang::DiagnosticsEngine::ak_uint) ||
        info.getRawArg(7) != 0)
      return false;
    if (info.getArgKind(4) != clang::DiagnosticsEngine::ak_qualtype) return false;
    clang::QualType type = clang::QualType::getFromOpaquePtr(reinterpret_cast<void*>(info.getRawArg(4)));
    return type->isExtVectorType();
  }

  // Lowered offsets [begin, end) of a diagnostic's range in one checked
  // file (the file or one of its own headers), outside macro expansions.
  struct Span {
    size_t begin = 0, end = 0;
    std::string file;  // as Insertion::file
  };
  std::optional<Span> operand_span(const clang::SourceManager& sm, const clang::CharSourceRange& range) const {
    if (!lang_options_ || range.getBegin().isMacroID() || range.getEnd().isMacroID()) return std::nullopt;
    const std::optional<std::string> file = locator_.checked_file(sm, range.getBegin());
    if (!file || locator_.checked_file(sm, range.getEnd()) != file) return std::nullopt;
    clang::SourceLocation end = range.getEnd();
    if (range.isTokenRange()) end = clang::Lexer::getLocForEndOfToken(end, 0, sm, *lang_options_);
    if (end.isInvalid()) return std::nullopt;
    size_t b = sm.getFileOffset(range.getBegin()), e = sm.getFileOffset(end);
    if (e <= b || e > locator_.lowered_text(*file).size()) return std::nullopt;
    return Span{b, e, *file};
  }

  // Errors clang reports on valid Metal that the cpu backend compiles as
  // written:
  //  - `threadgroup float local_buffer[32] = {0};` (MLX's layer_norm):
  //    Apple's compiler accepts it; the cpu backend accepts it and does not
  //    apply the initializer (runtime/backends/cpu/msl_lowering.cpp,
  //    lower_threadgroup_declarations, which says why);
  //  - `device Complex<float>* x [[buffer(0)]]`: OpenCL allows a kernel only
  //    pointers to standard-layout, trivial classes; Metal binds a buffer of
  //    any class (MLX's kernels take `device complex64_t*`, whose
  //    constructors make it non-trivial), and the cpu backend runs them (its
  //    kernels are plain functions behind thunks);
  //  - a visible_function_table parameter: OpenCL allows no class in the
  //    private space as a kernel parameter; Metal binds it by value with
  //    [[buffer(n)]] (MSL section 2.15), as the cpu backend does
  //    (msl_lowering.cpp, is_buffer_handle). The matchers check its binding.
  static bool is_valid_metal_clang_rejects(const clang::Diagnostic& info, std::string_view text) {
    if (info.getID() == clang::diag::err_local_cant_init) return true;
    return info.getID() == clang::diag::err_bad_kernel_param_type &&
           (points_into_a_buffer(info) || text.find("visible_function_table<") != std::string_view::npos);
  }

  // Whether the diagnostic's type argument is a pointer or reference into
  // device, constant or threadgroup memory.
  static bool points_into_a_buffer(const clang::Diagnostic& info) {
    if (info.getNumArgs() < 1 || info.getArgKind(0) != clang::DiagnosticsEngine::ak_qualtype) return false;
    const clang::QualType type = clang::QualType::getFromOpaquePtr(reinterpret_cast<void*>(info.getRawArg(0)));
    if (!type->isPointerType() && !type->isReferenceType()) return false;
    const clang::LangAS space = type->getPointeeType().getAddressSpace();
    return space == clang::LangAS::opencl_global || space == clang::LangAS::opencl_constant ||
           space == clang::LangAS::opencl_local;
  }

  // The errors on valid Metal that the cpu backend repairs from clang's
  // diagnostics (runtime/backends/cpu/diagnostic_repair.h), repaired alike:
  //  - a conditional whose arms are one type in different address spaces
  //    (`c ? tg[i] : T(0)` with a threadgroup bfloat tg, MLX's conv.metal;
  //    `i < n ? src[i] : bfloat(0)`, its loaders): Metal's arms are the
  //    values (C++14 [expr.cond]/4-6: the lvalue converts to a prvalue of its
  //    type, address space aside, MSL section 4), so each arm in an address
  //    space becomes `__mf_rvalue(arm)`, a prvalue copy;
  //  - a scalar of higher rank than a vector's elements (`0.5 * a` with a
  //    half2 a, MLX's fft/radix.h; `float * half4`, llama.cpp): MSL section
  //    2.13, the scalar converts to the vector's element type, so it becomes
  //    `static_cast<__mf_scalar_operand_t<decltype(VECTOR), decltype(SCALAR)>>(SCALAR)`
  //    (that element type in every instantiation of a template).
  void collect_operand_repairs(const clang::Diagnostic& info) {
    const unsigned id = info.getID();
    if (id == clang::diag::err_typecheck_convert_incompatible) {
      collect_bfloat_assignment_repair(info);
      return;
    }
    const bool conditional = id == clang::diag::err_typecheck_cond_incompatible_operands ||
                             id == clang::diag::err_conditional_ambiguous_ovl;
    const bool rank = id == clang::diag::err_opencl_scalar_type_rank_greater_than_vector_type;
    if ((!conditional && !rank) || info.getNumArgs() < 2 || info.getNumRanges() != 2 || !info.hasSourceManager())
      return;
    if (info.getArgKind(0) != clang::DiagnosticsEngine::ak_qualtype ||
        info.getArgKind(1) != clang::DiagnosticsEngine::ak_qualtype)
      return;
    clang::QualType types[2] = {clang::QualType::getFromOpaquePtr(reinterpret_cast<void*>(info.getRawArg(0))),
                                clang::QualType::getFromOpaquePtr(reinterpret_cast<void*>(info.getRawArg(1)))};
    const clang::SourceManager& sm = info.getSourceManager();
    std::optional<Span> spans[2] = {operand_span(sm, info.getRange(0)), operand_span(sm, info.getRange(1))};
    if (!spans[0] || !spans[1] || spans[0]->file != spans[1]->file) return;
    if (conditional) {
      // One type (genuinely different types are Metal's error too).
      if (types[0].getCanonicalType().getTypePtr() != types[1].getCanonicalType().getTypePtr()) return;
      for (int k = 0; k < 2; ++k) {
        if (types[k].getAddressSpace() == clang::LangAS::Default) continue;
        repairs_.push_back({spans[k]->begin, "__mf_rvalue(", true, spans[k]->file});
        repairs_.push_back({spans[k]->end, ")", false, spans[k]->file});
      }
      return;
    }
    const bool first_is_vector = types[0]->isExtVectorType(), second_is_vector = types[1]->isExtVectorType();
    if (first_is_vector == second_is_vector) return;
    const auto& vector = *spans[first_is_vector ? 0 : 1];
    const auto& scalar = *spans[first_is_vector ? 1 : 0];
    const std::string& text = locator_.lowered_text(scalar.file);
    auto slice = [&](const Span& span) { return text.substr(span.begin, span.end - span.begin); };
    repairs_.push_back({scalar.begin,
                        fmt::format("static_cast<__mf_scalar_operand_t<decltype({}), decltype({})>>(", slice(vector),
                                    slice(scalar)),
                        true, scalar.file});
    repairs_.push_back({scalar.end, ")", false, scalar.file});
  }

  // An assignment from a bfloat to an integer (`out[i] = tgp_vals[i]`, MLX's
  // sort.h): the source becomes `__mf_implicit_scalar(SOURCE)`, as the cpu
  // backend repairs it (runtime/backends/cpu/diagnostic_repair.h).
  void collect_bfloat_assignment_repair(const clang::Diagnostic& info) {
    // Arguments 0 and 1: the destination's and the source's types.
    if (info.getNumRanges() != 1 || !info.hasSourceManager() || info.getNumArgs() < 2 ||
        info.getArgKind(1) != clang::DiagnosticsEngine::ak_qualtype)
      return;
    const clang::QualType from = clang::QualType::getFromOpaquePtr(reinterpret_cast<void*>(info.getRawArg(1)));
    const clang::CXXRecordDecl* record = from.getCanonicalType()->getAsCXXRecordDecl();
    if (!record || record->getName() != "bfloat" || !record->getDeclContext()->isTranslationUnit()) return;
    std::optional<Span> source = operand_span(info.getSourceManager(), info.getRange(0));
    if (!source) return;
    repairs_.push_back({source->begin, "__mf_implicit_scalar(", true, source->file});
    repairs_.push_back({source->end, ")", false, source->file});
  }

  const Locator& locator_;
  std::vector<Diagnostic>& out_;
  const clang::LangOptions* lang_options_ = nullptr;
  std::optional<size_t> last_error_;
  int notes_ = 0;
  std::vector<Insertion> repairs_;
  int accepted_errors_ = 0;
  bool setup_failed_ = false;
};

// Lines of a checked file in a conditional block the preprocessor skipped:
// code Metal's compiler never sees (ggml-common.h includes <stdint.h> under
// `#if defined(GGML_COMMON_DECL_C)`), where lexical findings do not hold.
struct SkippedLines {
  std::string file;  // as Locator names it
  unsigned first = 0, last = 0;
  bool contains(const std::string& f, unsigned line) const { return f == file && line >= first && line <= last; }
};

struct ParseOutput {
  std::vector<Diagnostic> findings;  // AST rules
  std::vector<KernelSignature> kernels;
  std::vector<FunctionConstant> constants;
  std::vector<SkippedLines> skipped;
};

class SkippedBlocks : public clang::PPCallbacks {
 public:
  SkippedBlocks(const Locator& locator, const clang::SourceManager& sm, std::vector<SkippedLines>& out)
      : locator_(locator), sm_(sm), out_(out) {}
  void SourceRangeSkipped(clang::SourceRange range, clang::SourceLocation endif) override {
    if (!in_checked_code(sm_, range.getBegin())) return;
    const Diagnostic begin = locator_.locate(sm_, range.getBegin()), end = locator_.locate(sm_, endif);
    out_.push_back({begin.file, begin.line, end.line});
  }

 private:
  const Locator& locator_;
  const clang::SourceManager& sm_;
  std::vector<SkippedLines>& out_;
};

class CheckConsumer : public clang::ASTConsumer {
 public:
  CheckConsumer(const Locator& locator, ParseOutput& out) : locator_(locator), out_(out) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    std::vector<Finding> findings;
    // Only the checked file's declarations are walked (ast_support.h).
    const std::vector<clang::Decl*> top_level = checked_code_decls(context);
    context.setTraversalScope(top_level);
    clang::ast_matchers::MatchFinder finder;
    RuleMatchers rules(findings);
    rules.register_on(finder);
    finder.matchAST(context);
    find_tensor_op_misuse(context, top_level, findings);
    const clang::SourceManager& sm = context.getSourceManager();
    for (const Finding& f : findings) {
      Diagnostic d = locator_.locate(sm, f.location);
      d.rule = std::string(f.rule);
      d.message = f.message;
      out_.findings.push_back(std::move(d));
    }
    auto line_of = [&](clang::SourceLocation loc) { return locator_.locate(sm, loc).line; };
    out_.kernels = extract_kernels(context, top_level, line_of);
    out_.constants = extract_function_constants(context, top_level, line_of);
  }

 private:
  const Locator& locator_;
  ParseOutput& out_;
};

class CheckAction : public clang::ASTFrontendAction {
 public:
  CheckAction(const Locator& locator, ParseOutput& out) : locator_(locator), out_(out) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef) override {
    ci.getPreprocessor().addPPCallbacks(
        std::make_unique<SkippedBlocks>(locator_, ci.getSourceManager(), out_.skipped));
    return std::make_unique<CheckConsumer>(locator_, out_);
  }

 private:
  const Locator& locator_;
  ParseOutput& out_;
};

std::filesystem::path resolve_standin(const CheckOptions& options) {
  std::filesystem::path dir = options.standin_dir;
  if (dir.empty())
    if (const char* env = std::getenv("MFAGEN_STANDIN_DIR"); env && *env) dir = env;
  if (dir.empty() || !std::filesystem::exists(dir / "metal_stdlib")) {
    if (options.standin_dir.empty() && !std::getenv("MFAGEN_STANDIN_DIR")) dir = MFAGEN_CHECK_STANDIN_DIR;
  }
  if (!std::filesystem::exists(dir / "metal_stdlib") && options.standin_dir.empty()) {
    // An installed mfagen (`cmake --install`): PREFIX/bin/mfagen and PREFIX/share/mfagen/metal_standin.
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    std::filesystem::path installed = exe.parent_path().parent_path() / "share/mfagen/metal_standin/include";
    if (!ec && std::filesystem::exists(installed / "metal_stdlib")) dir = installed;
  }
  if (dir.empty() || !std::filesystem::exists(dir / "metal_stdlib"))
    throw CheckerError(fmt::format("mfagen check: the Metal stand-in header '{}' does not exist (set "
                                   "MFAGEN_STANDIN_DIR to the folder holding metal_stdlib)",
                                   (dir / "metal_stdlib").string()));
  return dir;
}

std::string virtual_main_name(std::string_view file_name) {
  std::string base = std::filesystem::path(std::string(file_name)).filename().string();
  if (base.empty()) base = "input.metal";
  std::string path = fmt::format("{}/{}", kVirtualDir, base);
  // Not one of the checker's own files.
  if (path == kPreludePath || path == kStandinHeaderPath || path == kStandinPchPath)
    path = fmt::format("{}/input-{}", kVirtualDir, base);
  return path;
}

struct ClangParse {
  std::vector<Diagnostic> clang_errors;
  ParseOutput output;
  bool ran = false;           // clang parsed without errors (but those the checker accepts)
  std::vector<Insertion> repairs;  // CollectingDiagnostics::repairs
  bool setup_failed = false;  // clang could not set the parse up (e.g. it refused the PCH)
};

// What every parse of one checked file shares.
struct ParseSetup {
  std::string main_path;  // where clang sees the lowered file
  std::filesystem::path standin;
  const CheckedHeaders& headers;  // its own headers, lowered, at their paths
  const std::vector<std::filesystem::path>& include_dirs;
};

// One clang parse of the lowered file: with `pch`, the stand-in comes
// precompiled (-include-pch); without, the prelude is included and the
// stand-in parsed where the file includes it.
ClangParse parse_lowered(const LoweredMsl& lowered, const Locator& locator, const ParseSetup& setup,
                         const PrecompiledStandin* pch) {
  const std::string& main_path = setup.main_path;
  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  memory->addFile(main_path, 0, llvm::MemoryBuffer::getMemBuffer(lowered.text, main_path));
  // Over the real files: clang includes them lowered.
  for (const auto& [path, header] : setup.headers)
    memory->addFile(path, 0, llvm::MemoryBuffer::getMemBuffer(header.lowered.text, path));
  memory->addFile(kPreludePath, 0, llvm::MemoryBuffer::getMemBuffer(prelude_text(), kPreludePath));
  if (pch) {
    // The PCH names its header as an input: clang checks that it is still
    // there, with the same size.
    memory->addFile(kStandinHeaderPath, 0,
                    llvm::MemoryBuffer::getMemBuffer(standin_header_text(), kStandinHeaderPath));
    memory->addFileNoOwn(kStandinPchPath, 0, llvm::MemoryBufferRef(pch->bytes, kStandinPchPath));
  }
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(memory);
  auto files = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions(), overlay);

  std::vector<std::string> flags = language_flags(setup.standin);
  flags.insert(flags.begin(), "-fsyntax-only");
  for (const std::filesystem::path& dir : setup.include_dirs) flags.insert(flags.end(), {"-I", dir.string()});
  flags.insert(flags.end(), {pch ? "-include-pch" : "-include", std::string(pch ? kStandinPchPath : kPreludePath)});
  std::vector<std::string> args = cc1_command_line(flags, main_path);
  if (args.empty()) {  // the driver, with its diagnostics
    args = {"mfagen-check"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(main_path);
  }

  ClangParse parse;
  CollectingDiagnostics consumer(locator, parse.clang_errors);
  clang::tooling::ToolInvocation invocation(args, std::make_unique<CheckAction>(locator, parse.output), files.get());
  invocation.setDiagnosticConsumer(&consumer);
  parse.ran = invocation.run();
  // Every error clang reported was one on valid Metal the checker accepts.
  if (!parse.ran && parse.clang_errors.empty() && consumer.accepted_errors() > 0) parse.ran = true;
  parse.repairs = consumer.repairs();
  parse.setup_failed = consumer.setup_failed() || (!parse.ran && parse.clang_errors.empty());
  return parse;
}

// The lowered text with the insertions into `file` (back to front; at one
// offset the openers first, so that the closers inserted after them end what
// precedes).
LoweredMsl with_insertions(const LoweredMsl& lowered, std::vector<Insertion> insertions, const std::string& file) {
  LoweredMsl out = lowered;
  std::erase_if(insertions, [&](const Insertion& i) { return i.file != file; });
  std::sort(insertions.begin(), insertions.end(), [](const Insertion& x, const Insertion& y) {
    return x.offset != y.offset ? x.offset > y.offset : x.opens > y.opens;
  });
  insertions.erase(std::unique(insertions.begin(), insertions.end()), insertions.end());
  for (const Insertion& i : insertions) {
    if (i.offset > out.text.size()) continue;
    out.text.insert(i.offset, i.text);
    const uint32_t origin = out.origin[std::min(i.offset, out.origin.size() - 1)];
    out.origin.insert(out.origin.begin() + static_cast<std::ptrdiff_t>(i.offset), i.text.size(), origin);
  }
  return out;
}

// Valid Metal that clang-16 rejects and the cpu backend repairs from clang's
// diagnostics (runtime/backends/cpu/diagnostic_repair.h): a braced list
// passed for a vector parameter (named `__mf_braced_vector{...}`), a
// conditional between arms of one type in different address spaces and a
// scalar of higher rank than a vector's elements (CollectingDiagnostics::
// collect_operand_repairs). The checker repairs them alike, round after
// round as a repair can expose an enclosing expression, and reports the
// repaired parse when no error is left in it, else the original (which is
// what the cpu backend reports too).
ClangParse with_valid_metal_repaired(ClangParse parse, std::string_view source, const LoweredMsl& lowered,
                                     const std::string& file, const ParseSetup& setup,
                                     const PrecompiledStandin* pch) {
  LoweredMsl repaired = lowered;
  CheckedHeaders headers = setup.headers;  // the file's own headers are repaired alike
  const ParseSetup repaired_setup{setup.main_path, setup.standin, headers, setup.include_dirs};
  std::vector<Insertion> repairs = parse.repairs;
  for (int round = 0; round < 8 && !repairs.empty(); ++round) {
    repaired = with_insertions(repaired, repairs, "");
    for (auto& [path, header] : headers) header.lowered = with_insertions(header.lowered, repairs, path);
    const Locator locator(source, repaired, file, &headers);
    ClangParse retry = parse_lowered(repaired, locator, repaired_setup, pch);
    if (retry.ran && retry.clang_errors.empty()) return retry;
    repairs = retry.repairs;
  }
  return parse;
}

}  // namespace

std::string Diagnostic::to_string() const {
  std::string where = line ? fmt::format("{}:{}:{}: ", file, line, column) : (file.empty() ? "" : file + ": ");
  return fmt::format("{}error: {} [{}]", where, message, rule);
}

std::string_view to_string(AddressSpace space) {
  switch (space) {
    case AddressSpace::device: return "device";
    case AddressSpace::constant: return "constant";
    case AddressSpace::threadgroup: return "threadgroup";
    case AddressSpace::thread: return "thread";
    case AddressSpace::none: break;
  }
  return "";
}

std::string BufferParam::metal_type() const {
  std::string out(to_string(space));
  if (!out.empty()) out += ' ';
  if (is_const) out += "const ";
  return out + element_type + (is_reference ? "&" : "*");
}

const BufferParam* KernelSignature::buffer(uint32_t index) const {
  for (const BufferParam& b : buffers)
    if (b.index == index) return &b;
  return nullptr;
}

const KernelSignature* CheckResult::kernel(std::string_view name) const {
  for (const KernelSignature& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

CheckResult check_msl(std::string_view source, std::string_view file_name, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::filesystem::path standin = resolve_standin(options);
  CheckResult result;
  result.file = std::string(file_name);

  // The file's directory, where its quoted includes are found first (none
  // for a source that is not a file on disk).
  std::error_code ec;
  const std::filesystem::path on_disk(result.file);
  const bool is_file = !result.file.empty() && std::filesystem::is_regular_file(on_disk, ec);
  const std::filesystem::path main_dir = is_file ? std::filesystem::absolute(on_disk, ec).parent_path() : "";
  // Absolute, so that clang names a header found there as find_header does.
  std::vector<std::filesystem::path> include_dirs;
  for (const std::filesystem::path& dir : options.include_dirs)
    include_dirs.push_back(std::filesystem::absolute(dir, ec).lexically_normal());
  const LoweredTree tree = lower_with_headers(source, main_dir, include_dirs);
  const LoweredMsl& lowered = tree.main;
  const Locator locator(source, lowered, result.file, &tree.headers);
  // With headers of its own, clang sees the file where it is, so that its
  // quoted includes resolve from its directory as Metal's compiler resolves them.
  const ParseSetup setup{is_file && !tree.headers.empty()
                             ? std::filesystem::absolute(on_disk, ec).lexically_normal().string()
                             : virtual_main_name(file_name),
                         standin, tree.headers, include_dirs};

  // A PCH names its headers by absolute path: with a relative stand-in
  // directory, diagnostics in the stand-in would name it otherwise than the
  // per-file parse does.
  std::shared_ptr<const PrecompiledStandin> pch;
  if (options.precompiled_standin && standin.is_absolute() && starts_with_metal_stdlib_include(lowered.text))
    pch = precompiled_standin(standin, options.cache_dir);
  ClangParse parse = parse_lowered(lowered, locator, setup, pch.get());
  if (pch && parse.setup_failed) {
    // clang refused the PCH (unreadable, or its inputs changed under it):
    // this file is parsed the slow way, and that PCH is not offered again.
    reject_precompiled_standin(*pch);
    pch.reset();
    parse = parse_lowered(lowered, locator, setup, nullptr);
  }
  parse = with_valid_metal_repaired(std::move(parse), source, lowered, result.file, setup, pch.get());
  if (!parse.ran && parse.clang_errors.empty())
    throw CheckerError(fmt::format("mfagen check: clang could not run on '{}'", result.file));
  result.used_precompiled_standin = pch != nullptr;
  std::vector<Diagnostic>& clang_errors = parse.clang_errors;
  ParseOutput& parsed = parse.output;

  // Lexical findings (the file's, then its headers'), AST findings, then
  // clang's errors; one per rule and place.
  std::vector<Diagnostic> all;
  auto add_lexical = [&](const std::string& file, LineColumn lc, const LexicalFinding& f) {
    for (const SkippedLines& block : parsed.skipped)
      if (block.contains(file, lc.line)) return;
    all.push_back({file, lc.line, lc.column, std::string(f.rule), f.message});
  };
  for (const LexicalFinding& f : lowered.findings) add_lexical(result.file, locator.at_original(f.offset), f);
  for (const auto& [path, header] : tree.headers)
    for (const LexicalFinding& f : header.lowered.findings) add_lexical(path, line_column(header.original, f.offset), f);
  for (Diagnostic& d : parsed.findings) all.push_back(std::move(d));
  std::set<std::tuple<std::string, unsigned, unsigned>> rule_places;
  for (const Diagnostic& d : all) rule_places.insert({d.file, d.line, d.column});
  for (Diagnostic& d : clang_errors) {
    // An "undeclared identifier 'std'" where the std-library rule already spoke.
    if (d.rule == rules::kCompileError && rule_places.contains({d.file, d.line, d.column})) continue;
    all.push_back(std::move(d));
  }
  std::set<std::tuple<std::string, unsigned, unsigned, std::string>> seen;
  for (Diagnostic& d : all)
    if (seen.insert({d.file, d.line, d.column, d.rule}).second) result.diagnostics.push_back(std::move(d));
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    bool a_main = a.file == result.file, b_main = b.file == result.file;
    if (a_main != b_main) return a_main;
    if (a_main) return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    return std::tie(a.file, a.line, a.column) < std::tie(b.file, b.line, b.column);
  });
  result.kernels = std::move(parsed.kernels);
  result.function_constants = std::move(parsed.constants);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<CheckResult> check_many(const std::vector<SourceFile>& files, const CheckOptions& options, unsigned jobs) {
  std::vector<CheckResult> results(files.size());
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(files.size()));
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        results[i] = check_msl(files[i].text, files[i].name, options);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  if (jobs <= 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(work);
    for (std::thread& t : threads) t.join();
  }
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace mfagen::check
