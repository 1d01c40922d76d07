#include "check/ast_support.h"

#include <clang/AST/Attr.h>
#include <clang/Basic/SourceManager.h>

#include <charconv>
#include <set>

#include "check/parse_setup.h"

namespace mfagen::check {

std::vector<MslAttribute> msl_attributes(const clang::Decl& decl) {
  std::vector<MslAttribute> out;
  for (const auto* annotate : decl.specific_attrs<clang::AnnotateAttr>()) {
    llvm::StringRef text = annotate->getAnnotation();
    if (!text.consume_front("msl:")) continue;
    MslAttribute a;
    size_t open = text.find('(');
    a.name = text.substr(0, open).trim().str();
    if (open != llvm::StringRef::npos) {
      llvm::StringRef rest = text.substr(open + 1);
      rest.consume_back(")");
      a.argument = rest.trim().str();
    } else if (annotate->args_size() == 1) {
      // annotate("msl:host_name", "f_" "float"): the argument an expression
      // (lowering.cpp), here its string, quoted as written in the attribute.
      const auto* literal = llvm::dyn_cast<clang::StringLiteral>((*annotate->args_begin())->IgnoreParenImpCasts());
      if (literal) a.argument = "\"" + literal->getString().str() + "\"";
    }
    a.location = annotate->getLocation();
    out.push_back(std::move(a));
  }
  // specific_attrs lists attributes in reverse order of appearance.
  std::reverse(out.begin(), out.end());
  return out;
}

bool in_checked_code(const clang::SourceManager& sm, clang::SourceLocation loc) {
  if (loc.isInvalid()) return false;
  const clang::SourceLocation at = sm.getExpansionLoc(loc);
  if (sm.isWrittenInMainFile(at)) return true;
  if (sm.isInSystemHeader(at)) return false;  // the stand-in (-isystem)
  // The prelude and the precompiled stand-in's header live in kVirtualDir;
  // built-in and command-line buffers have no file name.
  const llvm::StringRef file = sm.getFilename(at);
  return !file.empty() && !file.starts_with(kVirtualDir);
}

bool in_checked_code(const clang::Decl& decl) {
  return in_checked_code(decl.getASTContext().getSourceManager(), decl.getLocation());
}

std::vector<clang::Decl*> checked_code_decls(clang::ASTContext& context) {
  // noload_decls: those of the precompiled stand-in are left where they are
  // (loading every one of them costs more than parsing a kernel); none of
  // them is the checked code's.
  std::vector<clang::Decl*> out;
  for (clang::Decl* decl : context.getTranslationUnitDecl()->noload_decls())
    if (in_checked_code(*decl)) out.push_back(decl);
  return out;
}

std::optional<uint32_t> attribute_index(const MslAttribute& attribute) {
  const std::string& s = attribute.argument;
  uint32_t value = 0;
  int base = 10;
  size_t start = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, start = 2;
  auto [end, ec] = std::from_chars(s.data() + start, s.data() + s.size(), value, base);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

bool is_kernel(const clang::FunctionDecl& function) {
  if (function.hasAttr<clang::OpenCLKernelAttr>()) return true;
  for (const MslAttribute& a : msl_attributes(function))
    if (a.name == "kernel") return true;
  return false;
}

AddressSpace metal_space(clang::LangAS space) {
  switch (space) {
    case clang::LangAS::opencl_global: return AddressSpace::device;
    case clang::LangAS::opencl_constant: return AddressSpace::constant;
    case clang::LangAS::opencl_local: return AddressSpace::threadgroup;
    case clang::LangAS::opencl_private: return AddressSpace::thread;
    default: return AddressSpace::none;
  }
}

bool in_named_space(clang::LangAS space) {
  return space == clang::LangAS::opencl_global || space == clang::LangAS::opencl_local ||
         space == clang::LangAS::opencl_constant;
}

std::string space_name(clang::LangAS space) { return std::string(to_string(metal_space(space))); }

std::string metal_type_name(clang::QualType type, const clang::ASTContext& context) {
  clang::QualType canonical = context.removeAddrSpaceQualType(type.getCanonicalType()).getUnqualifiedType();
  if (const auto* vector = canonical->getAs<clang::ExtVectorType>())
    return metal_type_name(vector->getElementType(), context) + std::to_string(vector->getNumElements());
  clang::PrintingPolicy policy(context.getLangOpts());
  policy.SuppressTagKeyword = true;
  policy.SuppressScope = false;
  policy.FullyQualifiedName = false;
  std::string name = canonical.getAsString(policy);
  static const std::pair<std::string_view, std::string_view> kNames[] = {
      {"unsigned int", "uint"}, {"unsigned short", "ushort"}, {"unsigned char", "uchar"},
      {"unsigned long", "ulong"}, {"signed char", "char"}, {"metal::", ""}};
  for (auto [from, to] : kNames)
    for (size_t at = name.find(from); at != std::string::npos; at = name.find(from, at + to.size()))
      name.replace(at, from.size(), to);
  return name;
}

std::string metal_spelling(std::string message) {
  static const std::pair<std::string_view, std::string_view> kSpaces[] = {
      {"__global ", "device "}, {"__local ", "threadgroup "}, {"__constant ", "constant "},
      {"__private ", "thread "}, {"__generic ", ""}, {"'__global'", "'device'"}, {"'__local'", "'threadgroup'"},
      {"'__constant'", "'constant'"}, {"'__private'", "'thread'"}, {"'__generic'", "'generic'"},
      {" *__private", " *"}, {"C++ for OpenCL", "the host dialect (C++ for OpenCL)"}};
  for (auto [from, to] : kSpaces)
    for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
      message.replace(at, from.size(), to);
  return message;
}

bool is_builtin_attribute(std::string_view name) {
  static const std::set<std::string_view> names = {
      "thread_position_in_grid", "threadgroup_position_in_grid", "thread_position_in_threadgroup",
      "threads_per_threadgroup", "dispatch_threads_per_threadgroup", "threadgroups_per_grid", "threads_per_grid",
      "thread_index_in_threadgroup", "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup",
      "simdgroups_per_threadgroup", "threads_per_simdgroup", "thread_index_in_quadgroup",
      "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup", "grid_origin", "grid_size",
      "dispatch_quadgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup", "thread_execution_width"};
  return names.contains(name);
}

bool is_implicit_buffer(const clang::ParmVarDecl& param) {
  for (const MslAttribute& a : msl_attributes(param))
    if (a.name != "function_constant") return false;
  const clang::QualType type = param.getType();
  if (!type->isPointerType() && !type->isReferenceType()) return false;
  const clang::LangAS space = type->getPointeeType().getAddressSpace();
  return space == clang::LangAS::opencl_global || space == clang::LangAS::opencl_constant;
}

}  // namespace mfagen::check
