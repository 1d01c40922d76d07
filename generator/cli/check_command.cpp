// `mfagen check FILE.metal... [--manifest M]`: parses each file in-process
// with clang against the Metal stand-in header (generator/check), reports
// what Metal would reject and clang's own errors as
// `file:line:column: error: message [rule]`, prints each kernel's extracted
// signature, and cross-checks the signatures against a manifest.json.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "check/check.h"
#include "check/manifest_check.h"
#include "commands.h"
#include "errors.h"
#include "io/text_file.h"

namespace mfagen::cli {
namespace {

struct CheckArgs {
  std::vector<std::string> files;
  std::string manifest;
  bool signatures = false;
  bool quiet = false;
  unsigned jobs = 0;
  std::vector<std::string> include_dirs;
};

std::string signature_text(const check::KernelSignature& k) {
  std::string out = fmt::format("  kernel {} (line {}): {} B static threadgroup memory\n", k.name, k.line,
                                k.threadgroup_memory_bytes);
  for (const check::BufferParam& b : k.buffers)
    out += fmt::format("    [[buffer({})]] {} {}\n", b.index, b.metal_type(), b.name);
  for (const check::BufferParam& b : k.threadgroup_buffers)
    out += fmt::format("    [[threadgroup({})]] {} {}\n", b.index, b.metal_type(), b.name);
  for (const check::BuiltinParam& b : k.builtins) out += fmt::format("    [[{}]] {} {}\n", b.attribute, b.type, b.name);
  for (const check::TensorOpScope& s : k.tensor_op_scopes)
    out += fmt::format("    tensor operation over execution_simdgroups<{}> (line {}): {} threads per threadgroup\n",
                       s.simdgroups, s.line, 32 * s.simdgroups);
  return out;
}

int run_check(const CheckArgs& args) {
  std::vector<check::SourceFile> sources;
  for (const std::string& file : args.files) sources.push_back({file, io::read_text_file(file)});
  std::string manifest_text;
  if (!args.manifest.empty()) manifest_text = io::read_text_file(args.manifest);

  check::CheckOptions options;
  options.include_dirs.assign(args.include_dirs.begin(), args.include_dirs.end());
  std::vector<check::CheckResult> results = check::check_many(sources, options, args.jobs);
  std::vector<check::Diagnostic> manifest_findings;
  if (!args.manifest.empty()) manifest_findings = check::check_manifest(results, manifest_text, args.manifest);

  size_t findings = manifest_findings.size();
  for (const check::CheckResult& r : results) {
    for (const check::Diagnostic& d : r.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    findings += r.diagnostics.size();
    if (args.quiet) continue;
    fmt::print("{}: {} ({} kernel{}, {:.0f} ms)\n", r.file,
               r.ok() ? "ok" : fmt::format("{} finding{}", r.diagnostics.size(), r.diagnostics.size() == 1 ? "" : "s"),
               r.kernels.size(), r.kernels.size() == 1 ? "" : "s", r.seconds * 1e3);
    if (args.signatures) {
      for (const check::KernelSignature& k : r.kernels) fmt::print("{}", signature_text(k));
      for (const check::FunctionConstant& c : r.function_constants)
        fmt::print("  [[function_constant({})]] {} {}\n", c.index, c.type, c.name);
    }
  }
  for (const check::Diagnostic& d : manifest_findings) fmt::print(stderr, "{}\n", d.to_string());
  if (!args.quiet && !args.manifest.empty())
    fmt::print("{}: {}\n", args.manifest,
               manifest_findings.empty() ? "signatures match"
                                         : fmt::format("{} mismatch{}", manifest_findings.size(),
                                                       manifest_findings.size() == 1 ? "" : "es"));
  return findings == 0 ? kExitOk : kExitUserError;
}

}  // namespace

void register_check_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand("check", "Verify Metal kernels with clang (in-process) against Metal's rules");
  cmd->footer(
      "Each file is parsed as Metal (C++ for OpenCL with Metal's address spaces, against mfagen's\n"
      "metal_stdlib stand-in). Reported, as FILE:LINE:COLUMN: error: MESSAGE [RULE]: clang's errors\n"
      "[compile-error], valid Metal the cpu backend cannot lower [cpu-lowering], and what Metal\n"
      "rejects: virtual-function, exceptions, dynamic-allocation, goto, std-library,\n"
      "include, thread-pointer-escape, generic-pointer, kernel-parameter-attribute,\n"
      "duplicate-binding-index, kernel-return-type, double, static-local; and misused Metal 4\n"
      "TensorOps: cooperative-tensor-space (a cooperative tensor outside thread memory),\n"
      "tensor-op-scope (execution_simdgroups<N> larger than the threadgroup can be). With\n"
      "--manifest, each kernel's buffers, function constants and static threadgroup memory must\n"
      "match its manifest entry, and its threads per threadgroup the N of its execution_simdgroups<N>\n"
      "tensor operations [manifest].\n\n"
      "A file's own headers (#include \"h\" next to it or in an -I directory, #include <h> in an\n"
      "-I directory, as Metal's compiler finds them) are checked with it; findings in them name\n"
      "the header.\n\n"
      "Exit status: 0 clean, 1 findings or unreadable input, 2 internal error.");
  cmd->add_option("files", args->files, "MSL files to check")->required()->type_name("FILE.metal");
  cmd->add_option("--manifest", args->manifest, "cross-check the kernels' signatures against this manifest.json")
      ->type_name("MANIFEST");
  cmd->add_flag("--signatures", args->signatures, "print each kernel's extracted signature");
  cmd->add_flag("-q,--quiet", args->quiet, "print findings only");
  cmd->add_option("-j,--jobs", args->jobs, "files checked in parallel (default: one per core)");
  cmd->add_option("-I", args->include_dirs, "where the files' own headers are found, besides each file's directory "
                                            "(Metal's -I)")
      ->type_name("DIR");
  cmd->callback([args, &action] { action = [args] { return run_check(*args); }; });
}

}  // namespace mfagen::cli
