// Signature extraction: each kernel's buffers, builtin parameters, static
// threadgroup memory and tensor-operation scopes, and the program's function
// constants, read from the AST of the checked file.
#pragma once

#include <clang/AST/ASTContext.h>

#include <functional>
#include <vector>

#include "check/check.h"

namespace mfagen::check {

// Maps a location to its line in the original (unlowered) file.
using LineOf = std::function<unsigned(clang::SourceLocation)>;

// `top_level` is checked_code_decls(context) (ast_support.h): the checked
// file's kernels and constants are all within them.
std::vector<KernelSignature> extract_kernels(clang::ASTContext& context, const std::vector<clang::Decl*>& top_level,
                                             const LineOf& line_of);
std::vector<FunctionConstant> extract_function_constants(clang::ASTContext& context,
                                                         const std::vector<clang::Decl*>& top_level,
                                                         const LineOf& line_of);

}  // namespace mfagen::check
