// Helpers shared by the AST rules and the signature extraction: Metal
// attributes as the lowering left them (annotate("msl:...")), address spaces
// and type names in Metal spelling.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>

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

// The translation unit's top-level declarations written in the checked
// (main) file, in order. Every rule and the signatures look at code of the
// checked file only, so traversals start here rather than at the whole
// translation unit, which holds the stand-in too (and, when the stand-in
// comes precompiled, would be deserialized in full by a walk over it).
std::vector<clang::Decl*> main_file_decls(clang::ASTContext& context);

// Whether a declaration is written in the checked file (macro expansions at
// the place they are expanded).
bool in_main_file(const clang::Decl& decl);

// Thread-position and other builtin parameter attributes Metal defines.
bool is_builtin_attribute(std::string_view name);

}  // namespace mfagen::check
