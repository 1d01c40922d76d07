// How the Check stage calls clang: the virtual files every parse sees, the
// language flags, and the precompiled stand-in's header. One place, because
// clang accepts a precompiled header (standin_pch.h) only in a parse with the
// language flags it was built with.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::check {

// Files of the checker that live in memory (llvm's InMemoryFileSystem).
inline constexpr std::string_view kVirtualDir = "/mfagen-check";
inline constexpr std::string_view kPreludePath = "/mfagen-check/prelude.h";
// The header precompiled once per stand-in: the prelude, then <metal_stdlib>.
inline constexpr std::string_view kStandinHeaderPath = "/mfagen-check/standin.h";
inline constexpr std::string_view kStandinPchPath = "/mfagen-check/standin.pch";

// Declarations that let constructs Metal forbids parse (malloc, new, ...), so
// that the rules, not an "undeclared identifier", name them.
std::string_view prelude_text();

// The text of kStandinHeaderPath: what a checked file sees before its first
// line when it is parsed the slow way (-include prelude) and then includes
// <metal_stdlib> as its first directive.
std::string_view standin_header_text();

// clang driver flags of every parse and of the precompiled stand-in: C++ for
// OpenCL with Metal's address spaces, the stand-in directory as the system
// include path. No input file, no -include.
std::vector<std::string> language_flags(const std::filesystem::path& standin_dir);

// Whether the first thing of a (lowered) source, after comments and
// whitespace, is `#include <metal_stdlib>`: only then does the precompiled
// stand-in give the same parse as including it, because nothing the file
// declares or defines can come before the stand-in.
bool starts_with_metal_stdlib_include(std::string_view text);

}  // namespace mfagen::check
