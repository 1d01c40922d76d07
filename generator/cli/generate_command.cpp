// `mfagen generate`: spec files -> .metal kernels + manifest.json (+ depfile).
// All-or-nothing: every kernel is parsed, planned and rendered in memory
// before the first byte is written, so a bad spec leaves the output
// directory exactly as it was (or absent).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "check/manifest_check.h"
#include "commands.h"
#include "emit/emit.h"
#include "emit/manifest.h"
#include "errors.h"
#include "plan/kernel_plan.h"
#include "render/render_forward.h"
#include "spec/spec_parser.h"
#include "text_table.h"

namespace mfagen::cli {
namespace {

namespace fs = std::filesystem;

struct GenerateArgs {
  std::vector<std::string> specs;
  std::string out_dir;
  std::string depfile;
  bool quiet = false;
  bool check = true;  // the Check stage (generator/check), --no-check skips it
};

std::string elapsed_text(std::chrono::steady_clock::time_point start) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds < 1 ? fmt::format("{:.1f} ms", seconds * 1e3) : fmt::format("{:.2f} s", seconds);
}

bool contains(const std::vector<fs::path>& paths, const fs::path& p) {
  for (const fs::path& q : paths)
    if (q == p) return true;
  return false;
}

// Every plan rendered, on one thread per core (each kernel renders on its
// own; the results keep the plans' order, so the output does not depend on
// the thread count). A render error (a bug in mfagen) is rethrown here.
std::vector<std::string> render_all(const std::vector<plan::KernelPlan>& plans) {
  std::vector<std::string> sources(plans.size());
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::future<void>> parts;
  for (size_t w = 0; w < workers; ++w)
    parts.push_back(std::async(std::launch::async, [&, w] {
      for (size_t i = w; i < plans.size(); i += workers) sources[i] = render::render_forward(plans[i]);
    }));
  for (std::future<void>& part : parts) part.get();
  return sources;
}

int run_generate(const GenerateArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<fs::path> spec_files(args.specs.begin(), args.specs.end());

  // Spec and Plan stages throw spec::SpecError (file, JSON path, message).
  std::vector<plan::KernelPlan> plans;
  for (const spec::KernelSpec& s : spec::load_spec_files(spec_files)) plans.push_back(plan::plan_kernel(s));
  const std::vector<std::string> sources = render_all(plans);
  const std::string manifest = emit::manifest_json(plans, sources);
  if (args.check) {  // Check stage: Metal rules and signatures vs the manifest, before anything is written
    std::vector<check::SourceFile> files;
    for (size_t i = 0; i < plans.size(); ++i) files.push_back({emit::kernel_file_name(plans[i]), sources[i]});
    std::string findings = check::check_generated(files, manifest);
    if (!findings.empty())
      throw std::runtime_error("generated kernels fail the Metal check (nothing was written):\n" + findings);
  }

  std::optional<fs::path> depfile;
  if (!args.depfile.empty()) depfile = args.depfile;
  emit::EmitResult result;
  try {
    result = emit::emit_kernels(plans, sources, manifest, args.out_dir, spec_files, depfile);
  } catch (const std::system_error& e) {
    throw UserError(fmt::format("cannot write the output: {}", e.what()));
  }
  if (args.quiet) return kExitOk;

  std::vector<TextRow> rows;
  for (const plan::KernelPlan& p : plans) {
    const std::string file = emit::kernel_file_name(p);
    rows.push_back({p.entry, file, fmt::format("{} B threadgroup memory", p.threadgroup_bytes),
                    fmt::format("{} threads", p.threads),
                    contains(result.unchanged, fs::path(args.out_dir) / file) ? "(unchanged)" : ""});
  }
  fmt::print("{}", format_table(rows));
  fmt::print("generated {} kernel{} into {} ({} file{} written, {} unchanged) in {}\n", plans.size(),
             plans.size() == 1 ? "" : "s", args.out_dir, result.written.size(),
             result.written.size() == 1 ? "" : "s", result.unchanged.size(), elapsed_text(start));
  return kExitOk;
}

}  // namespace

void register_generate_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate Metal attention kernels and a manifest from spec files");
  cmd->footer(
      "Spec files are JSON (DESIGN.md section 2): one kernel object, or {\"kernels\": [...]}; a field\n"
      "given as a list expands to every combination. Kernel names must be unique across all files.\n\n"
      "Outputs, in DIR:\n"
      "  <name>.metal     one self-contained MSL kernel per spec (byte-identical for identical specs)\n"
      "  manifest.json    written last: names, hashes, canonical specs, tiles, threads, threadgroup\n"
      "                   memory, grid and buffer table of every kernel, for the runtime\n"
      "With --depfile F, F lists the spec files DIR/manifest.json depends on (Make/Ninja format),\n"
      "so a build reruns generate when a spec changes.\n\n"
      "Every spec is parsed, planned and rendered before anything is written: on any error nothing\n"
      "is written (DIR is not even created). Each file is replaced atomically; a file whose content\n"
      "is unchanged is not rewritten, so its timestamp stays and dependent builds do not rerun.\n\n"
      "Exit status: 0 ok; 1 bad spec (the message names the file, JSON path and what was\n"
      "expected) or unwritable output; 2 internal error.\n\n"
      "Example:\n"
      "  mfagen generate specs/llama.json -o build/kernels --depfile build/kernels.d");
  cmd->add_option("specs", args->specs, "spec files (JSON)")->required()->type_name("SPEC");
  cmd->add_option("-o,--out-dir", args->out_dir, "output directory (created)")->required()->type_name("DIR");
  cmd->add_option("--depfile", args->depfile, "also write a Make/Ninja depfile for DIR/manifest.json")
      ->type_name("FILE");
  cmd->add_flag("-q,--quiet", args->quiet, "print nothing on success");
  cmd->add_flag("!--no-check", args->check, "skip the clang check of the generated kernels (mfagen check)");
  cmd->callback([args, &action] { action = [args] { return run_generate(*args); }; });
}

}  // namespace mfagen::cli
