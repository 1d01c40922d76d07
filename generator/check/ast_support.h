// Helpers shared by the AST rules and the signature extraction: Metal
// attributes as the lowering left them (annotate("msl:...")), address spaces
// and type names in Metal spelling.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/ASTMatchers/ASTMatchersMacros.h>
#include <clang/Basic/SourceManager.h>

#include <optional>
#include <string>
#include <vector>

#include "check/check.h"

namespace mfagen::check {

struct MslAttribute {
  std::string name;      // "buffer", "thread_position_in_grid", "function_constant"
  std::string argument;  // "0" for buffer(0); empty when none
  clang::SourceLocation location;
};

// The Metal attributes of a declaration, in source order.
std::vector<MslAttribute> msl_attributes(const clang::Decl& decl);

// The integer argument of buffer(n), threadgroup(n), function_constant(n), ...
std::optional<uint32_t> attribute_index(const MslAttribute& attribute);

// Whether a function is a Metal kernel (the `kernel` keyword or [[kernel]]).
bool is_kernel(const clang::FunctionDecl& function);

AddressSpace metal_space(clang::LangAS space);
// Whether `space` is one Metal names (device, threadgroup, constant), and its Metal name.
bool in_named_space(clang::LangAS space);
std::string space_name(clang::LangAS space);

// A type without qualifiers and address space, in Metal spelling ("uint", "half", "AttentionParams").
std::string metal_type_name(clang::QualType type, const clang::ASTContext& context);

// clang's OpenCL spelling of address spaces in a message, as Metal writes them.
std::string metal_spelling(std::string message);

// Whether a location is in the checked code: the checked file, or a header
// it includes from its own tree (found next to the including file or in an
// -I directory, and lowered like it); never the stand-in (a system header)
// nor the checker's own prelude. Macro expansions count at the place they
// are expanded.
bool in_checked_code(const clang::SourceManager& sm, clang::SourceLocation loc);

// The translation unit's top-level declarations written in the checked
// code, in order. Every rule and the signatures look at checked code only,
// so traversals start here rather than at the whole translation unit, which
// holds the stand-in too (and, when the stand-in comes precompiled, would be
// deserialized in full by a walk over it).
std::vector<clang::Decl*> checked_code_decls(clang::ASTContext& context);

// Whether a declaration is written in the checked code.
bool in_checked_code(const clang::Decl& decl);

// The AST matchers' form of in_checked_code (clang's isExpansionInMainFile
// for the checked file and its own headers).
AST_POLYMORPHIC_MATCHER(isExpansionInCheckedCode,
                        AST_POLYMORPHIC_SUPPORTED_TYPES(clang::Decl, clang::Stmt, clang::TypeLoc)) {
  return in_checked_code(Finder->getASTContext().getSourceManager(), Node.getBeginLoc());
}

// A kernel parameter without a binding attribute that Metal binds anyway:
// a device or constant pointer or reference takes the lowest buffer index
// no other parameter names, in declaration order (llama.cpp's kernels; the
// cpu backend assigns them alike, msl_lowering.cpp).
bool is_implicit_buffer(const clang::ParmVarDecl& param);

// Thread-position and other builtin parameter attributes Metal defines.
bool is_builtin_attribute(std::string_view name);

}  // namespace mfagen::check
