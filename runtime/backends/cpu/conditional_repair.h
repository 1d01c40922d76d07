// Repairs the one place where C++ for OpenCL is stricter than Metal about
// address spaces: a conditional whose arms are the same class type in
// different address spaces, e.g. `i < n ? src[i] : bfloat(0)` with `src` a
// device pointer (common in MLX loaders). Metal gives a prvalue; clang rejects
// it ("incompatible operand types ('const __global bfloat' and 'bfloat')")
// because neither arm's address space contains the other's.
//
// The repair is driven by clang's own diagnostics, so it touches exactly the
// expressions clang rejected and nothing else: each arm in a non-private
// address space is wrapped in __mf_rvalue(...) (mfagen_standin/lowering_support.h), a
// prvalue copy — what Metal's conditional yields anyway. Evaluation order and
// short-circuiting are unchanged because the copy happens inside the arm.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mfagen::cpu {

// `lowered` failed to compile with `flags` (the build's language flags).
// Returns the repaired text when every error clang reports for it is such a
// conditional, and nullopt otherwise (the caller reports the original error).
std::optional<std::string> repair_address_space_conditionals(const std::string& lowered,
                                                             const std::vector<std::string>& flags,
                                                             const std::string& scratch_file);

}  // namespace mfagen::cpu
