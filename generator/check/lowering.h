// Token-aware lowering of MSL to C++ for OpenCL for the checker (DESIGN.md
// sections 6 and 7), written on the token layer it shares with the cpu
// backend's lowering (runtime/msl_syntax). Unlike the cpu backend's lowering
// it reads the file as written (comments and directives included), keeps
// Metal's constructs visible to the AST and keeps every position mappable
// back to the original text:
//   - device / constant / threadgroup / thread become __global / __constant /
//     __local / __private outside [[attributes]];
//   - Metal attributes [[buffer(0)]], [[function_constant(1)]], ... become
//     __attribute__((annotate("msl:buffer(0)"))) so the AST keeps them;
//     [[kernel]] becomes the `kernel` keyword;
//   - `constant T x [[function_constant(i)]];` gets an initializer (OpenCL
//     requires one);
//   - vector constructors and casts `float4(...)`, `(float4)x` take the
//     stand-in's value-converting helpers, exactly as in the cpu backend
//     (the same pass, mfagen/msl/vector_syntax.h); a unary operator before a
//     vector cast, which that rewrite cannot express, is a cpu-lowering
//     finding;
//   - unsuffixed floating literals, in code and in #define bodies, become
//     float literals, as Metal types them (mfagen/msl/literal_types.h, the
//     same pass as the cpu backend's);
//   - Metal 3.2's coherence qualifier `coherent(system)` is dropped
//     (mfagen/msl/coherence_qualifiers.h);
//   - an out-of-class definition of a constexpr static data member without
//     an initializer, redundant in C++17, is dropped
//     (mfagen/msl/redundant_constexpr_definitions.h, the same pass as the
//     cpu backend's);
//   - a class template partial specialization on vec<T, N> deduces the
//     element of the stand-in's ext vector, and one on a bfloat vector is
//     declared undefined (mfagen/msl/vec_partial_specializations.h, the same
//     pass as the cpu backend's);
//   - a template parameter of pointer-to-function type, and an alias
//     template of a pointer to function used only as such parameters'
//     types, become references to function (functions given as template
//     arguments; mfagen/msl/function_pointers.h, the same pass as
//     the cpu backend's, and the prelude enables clang's
//     __cl_clang_function_pointers as the cpu backend's lowering does);
//   - OpenCL-only keywords used as MSL identifiers (global, local, ...) are
//     renamed (mfagen/msl/opencl_keywords.h);
//   - #include of anything but <metal_*>,
//     <MetalPerformancePrimitives/MetalPerformancePrimitives.h> and the
//     headers `found` finds (the file's own headers, which the checker
//     lowers and checks with it), and `std::` names are lexical findings
//     (the include line is blanked so parsing continues).
// Every rewrite replaces single tokens; newlines are never added or
// removed: lowered line n is original line n.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::check {

struct LexicalFinding {
  std::string_view rule;
  size_t offset = 0;  // in the original text
  std::string message;
};

struct LoweredMsl {
  std::string text;
  std::vector<uint32_t> origin;  // original offset of every byte of `text` (+1 entry for the end)
  std::vector<LexicalFinding> findings;
};

// Whether an #include of `header` ("quoted", else <angled>) names a file the
// checker checks with the including one (check.cpp, find_header).
using HeaderFound = std::function<bool(std::string_view header, bool quoted)>;

LoweredMsl lower_for_check(std::string_view source, const HeaderFound& found = {});

// Line and column (1-based) of a byte offset.
struct LineColumn {
  unsigned line = 1;
  unsigned column = 1;
};
LineColumn line_column(std::string_view text, size_t offset);

}  // namespace mfagen::check
