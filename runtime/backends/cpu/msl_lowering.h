// Mechanical lowering of preprocessed MSL to C++ for OpenCL (DESIGN.md
// section 7), written on the token layer it shares with the checker's
// lowering (runtime/msl_syntax). It rewrites single tokens and a few fixed
// patterns; it never re-implements a kernel:
//   - address-space keywords (device, constant, threadgroup, thread) become
//     clang address spaces, except inside [[attributes]];
//   - kernel-scope `threadgroup T name[N];` becomes a reference to storage the
//     executor hands out per threadgroup (__mf_tg_alloc);
//   - `constant T name [[function_constant(i)]];` becomes a constexpr with the
//     launch's value, and is_function_constant_defined() a constant;
//   - vector constructors `float4(...)` and casts `(float4)x` get Metal's
//     value-converting semantics (clang's vector casts are bit casts),
//     unsuffixed floating literals are float as in Metal, and OpenCL-only
//     keywords used as identifiers are renamed and `coherent(system)`
//     dropped: the passes the checker runs too (mfagen/msl/vector_syntax.h,
//     literal_types.h, opencl_keywords.h, coherence_qualifiers.h);
//   - every kernel gets an `extern "C"` entry thunk that binds buffers and
//     thread-position arguments from their attributes;
//   - valid MSL that clang types differently gets the rewrites of
//     msl_dialect.h (found by compiling MLX's and llama.cpp's kernels).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mfagen/cpu/backend.h"

namespace mfagen::cpu {

struct LoweredSource {
  std::string text;
  std::vector<KernelSignature> kernels;
  std::vector<FunctionConstant> function_constants;
  // The files clang's line markers say the preprocessed text came from
  // ("<input>" first, then pseudo-files and real ones, in order of appearance).
  std::vector<std::string> files;
};

// Throws CompileError ("file:line: error: ...") for MSL the cpu backend cannot
// run faithfully or that Metal rejects.
LoweredSource lower_msl(std::string_view preprocessed, const std::map<uint32_t, ConstantValue>& constants);

}  // namespace mfagen::cpu
