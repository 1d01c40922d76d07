// `mfagen selftest`: validates mfagen on this machine in one command. The
// built-in correctness matrix (every dtype, head dims, causal modes, GQA,
// features, decode, backward) is generated, loaded as an app loads it, run
// through the chosen backend and judged against the float64 reference with
// the tolerance rule of DESIGN.md section 3. A failing case makes the exit
// status 1; --report writes a Markdown report to paste into an issue.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <system_error>

#include "backend_choice.h"
#include "commands.h"
#include "errors.h"
#include "io/atomic_file.h"
#include "selftest/builtin_matrix.h"
#include "selftest/machine_info.h"
#include "selftest/selftest_report.h"
#include "selftest/selftest_run.h"

namespace mfagen::cli {
namespace {

struct SelftestArgs {
  std::string backend = "cpu";
  std::string report;
  bool quick = false;
  std::string filter;
  std::string inject_error;
  bool no_detectors = false;
  bool list = false;
};

// The command as a user would type it again, for the report.
std::string command_line(const SelftestArgs& a) {
  std::string line = "mfagen selftest --backend " + a.backend;
  if (a.quick) line += " --quick";
  if (!a.filter.empty()) line += " --filter " + a.filter;
  if (!a.inject_error.empty()) line += " --inject-error " + a.inject_error;
  if (a.no_detectors) line += " --no-detectors";
  if (!a.report.empty()) line += " --report " + a.report;
  return line;
}

int run_selftest_command(const SelftestArgs& args) {
  const bool detectors = !args.no_detectors;
  check_backend_name(args.backend);
  const std::vector<selftest::SelftestCase> cases = selftest::filter_cases(
      selftest::builtin_matrix(args.quick ? selftest::MatrixSize::quick : selftest::MatrixSize::full), args.filter);
  if (cases.empty())
    throw UserError(fmt::format("--filter {}: no case of the {} matrix has it in its name (mfagen selftest --list{} "
                                "names them)",
                                args.filter, args.quick ? "quick" : "full", args.quick ? " --quick" : ""));
  if (args.list) {
    for (const selftest::SelftestCase& c : cases)
      fmt::print("{:<44} {}: {}\n", c.name, c.kernel.name, c.describe_call());
    return kExitOk;
  }

  const std::unique_ptr<Backend> backend = make_backend(args.backend, detectors);
  const std::string backend_text = describe_backend(*backend, detectors);
  fmt::print("mfagen selftest: {} cases through the {} backend, judged against the float64 reference\n"
             "backend: {}\n",
             cases.size(), backend->name(), backend_text);
  std::fflush(stdout);
  selftest::RunOptions options;
  options.inject_error = args.inject_error;
  const selftest::SelftestRun run = selftest::run_selftest(cases, *backend, options, [](const selftest::CaseResult& r) {
    fmt::print("{}", selftest::case_line(r));
    std::fflush(stdout);
  });
  fmt::print("{}", selftest::text_summary(run));

  if (!args.report.empty()) {
    const selftest::ReportContext context{MFAGEN_VERSION, selftest::describe_machine(), backend_text,
                                          command_line(args)};
    try {
      io::write_file_atomic(args.report, selftest::markdown_report(run, context));
    } catch (const std::system_error& e) {
      throw UserError(fmt::format("--report {}: cannot write the report: {}", args.report, e.what()));
    }
    fmt::print("wrote {}\n", args.report);
  }
  return run.ok() ? kExitOk : kExitUserError;
}

}  // namespace

void register_selftest_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<SelftestArgs>();
  CLI::App* cmd = app.add_subcommand("selftest", "Validate mfagen here: a built-in correctness matrix against float64");
  cmd->footer(
      "Generates the kernels of a built-in matrix of cases (float16, bfloat16, float32; head dims 64,\n"
      "128 and 80; causal none, top_left, bottom_right; GQA, MQA and no-GQA kernels; bool and additive\n"
      "masks, sliding window, softcap, ALiBi, lse on and off, all features together; split-K decode;\n"
      "quantized caches; packed sequences (varlen), paged caches and both together; backward dQ, dK,\n"
      "dV; cache writes into paged and dense caches, quantized on\n"
      "write) into a temporary directory, loads them as an app would (Library::load),\n"
      "selects and plans each call through the runtime and runs it through the backend on seeded\n"
      "inputs. Every output is judged against a float64 reference with the tolerance rule of\n"
      "DESIGN.md section 3 (a cache write byte for byte against the reference's, its error the count\n"
      "of differing bytes); each case prints its max error and the bound it had to meet. The full\n"
      "matrix takes about a minute on the cpu backend with detectors (less once kernels are cached).\n"
      "--inject-error changes one element of each output of the cases it names after they ran, to\n"
      "show that the judgement fails them.\n\n"
      "Examples:\n"
      "  mfagen selftest --backend metal --report selftest.md\n"
      "  mfagen selftest --quick\n"
      "  mfagen selftest --filter backward\n\n"
      "Exit status: 0 every case passed, 1 a case failed (or a bad option), 2 internal error.");
  cmd->add_option("--backend", args->backend, "cpu (default) or metal (builds with the Metal backend)")
      ->type_name("cpu|metal");
  cmd->add_option("--report", args->report, "also write a Markdown report here (atomically)")->type_name("FILE");
  cmd->add_flag("--quick", args->quick, "a handful of cases: forward, a mask, decode, backward");
  cmd->add_option("--filter", args->filter, "only the cases whose name contains this (see --list)")
      ->type_name("SUBSTRING");
  cmd->add_option("--inject-error", args->inject_error,
                  "check the checker: corrupt one element of each output of the cases whose name contains this; "
                  "they must fail")
      ->type_name("SUBSTRING");
  cmd->add_flag("--no-detectors", args->no_detectors, "cpu backend: run without the detectors (faster)");
  cmd->add_flag("--list", args->list, "print the cases (name, kernel, call) and run nothing");
  cmd->callback([args, &action] { action = [args] { return run_selftest_command(*args); }; });
}

}  // namespace mfagen::cli
