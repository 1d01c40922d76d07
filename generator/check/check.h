// The Check stage (DESIGN.md sections 1 and 6): generated MSL is parsed by
// clang in-process (libtooling) as C++ for OpenCL against the Metal stand-in
// header, with Metal's address spaces as clang address spaces. The checker
// reports what Metal rejects but our host dialect accepts (rules.h), clang's
// own errors, and extracts each kernel's signature for the manifest
// cross-check (manifest_check.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::check {

// One finding, located in the checked file (or a header it includes).
struct Diagnostic {
  std::string file;
  unsigned line = 0;    // 1-based; 0 when the finding has no location (manifest-level)
  unsigned column = 0;  // 1-based byte column in the original MSL
  std::string rule;     // rules.h name, "compile-error" for clang's errors, "manifest" for cross-check
  std::string message;
  // "file:line:column: error: message [rule]" (the location part is omitted when line is 0).
  std::string to_string() const;
};

enum class AddressSpace { none, device, constant, threadgroup, thread };
std::string_view to_string(AddressSpace space);

// A [[buffer(n)]] or [[threadgroup(n)]] parameter.
struct BufferParam {
  uint32_t index = 0;
  std::string name;
  AddressSpace space = AddressSpace::none;
  std::string element_type;  // canonical, Metal spelling: "half", "float", "AttentionParams"
  bool is_const = false;  // device and threadgroup only: constant is always read-only
  bool is_reference = false;  // `constant T&` rather than `constant T*`
  // Metal spelling of the whole type, as the manifest writes it: "device const half*".
  std::string metal_type() const;
};

// A parameter bound to a builtin such as [[thread_position_in_grid]].
struct BuiltinParam {
  std::string attribute;  // "threadgroup_position_in_grid"
  std::string name;
  std::string type;  // "uint3"
};

// A program-scope `constant T name [[function_constant(i)]];`.
struct FunctionConstant {
  uint32_t index = 0;
  std::string name;
  std::string type;
  unsigned line = 0;
};

// A tensor operation's execution_simdgroups<N> scope (N > 1): the kernel
// must be dispatched with N SIMD groups per threadgroup (DESIGN.md section 15).
struct TensorOpScope {
  uint32_t simdgroups = 0;
  unsigned line = 0;  // its first use
};

struct KernelSignature {
  std::string name;
  unsigned line = 0;
  std::vector<BufferParam> buffers;              // [[buffer(n)]], in declaration order
  std::vector<BufferParam> threadgroup_buffers;  // [[threadgroup(n)]]
  std::vector<BuiltinParam> builtins;
  // Sum of the kernel-scope `threadgroup T name[...]` declarations (static
  // threadgroup memory; [[threadgroup(n)]] buffers are sized at dispatch).
  uint64_t threadgroup_memory_bytes = 0;
  // The execution_simdgroups<N> scopes (N > 1) of the matmul2d operations it
  // runs, directly or through functions of its file (tensor_rules.h).
  std::vector<TensorOpScope> tensor_op_scopes;
  const BufferParam* buffer(uint32_t index) const;
};

struct CheckResult {
  std::string file;
  std::vector<Diagnostic> diagnostics;
  std::vector<KernelSignature> kernels;
  std::vector<FunctionConstant> function_constants;
  double seconds = 0;  // wall time of the check
  // The stand-in came precompiled (CheckOptions::precompiled_standin) rather
  // than parsed for this file; the findings are the same either way.
  bool used_precompiled_standin = false;
  bool ok() const { return diagnostics.empty(); }
  const KernelSignature* kernel(std::string_view name) const;
};

struct CheckOptions {
  // The Metal stand-in include directory (holds metal_stdlib); empty: the
  // MFAGEN_STANDIN_DIR environment variable, else the source tree's copy.
  std::filesystem::path standin_dir;
  // Parse the stand-in once (a clang precompiled header shared by every
  // check, standin_pch.h) rather than once per file. Used for files whose
  // first directive is `#include <metal_stdlib>`, with the stand-in at an
  // absolute path; false forces the per-file parse (the tests compare the
  // two).
  bool precompiled_standin = true;
  // Where the precompiled stand-in is kept across processes; empty:
  // $MFAGEN_CACHE_DIR, else $XDG_CACHE_HOME/mfagen, else ~/.cache/mfagen.
  std::filesystem::path cache_dir;
  // Where the file's own headers are found besides its directory (Metal's
  // -I; checked_headers.h): they are checked with it.
  std::vector<std::filesystem::path> include_dirs;
};

// An environment failure of the checker itself (no stand-in header, clang
// could not be set up); distinct from findings in the checked source.
class CheckerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Checks one MSL source. `file_name` names it in diagnostics. Thread-safe:
// independent calls may run concurrently.
CheckResult check_msl(std::string_view source, std::string_view file_name, const CheckOptions& options = {});

// Checks several sources, in parallel on up to `jobs` threads (0: one per
// core); results in input order.
struct SourceFile {
  std::string name;
  std::string text;
};
std::vector<CheckResult> check_many(const std::vector<SourceFile>& files, const CheckOptions& options = {},
                                    unsigned jobs = 0);

}  // namespace mfagen::check
