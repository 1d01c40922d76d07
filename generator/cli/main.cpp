// mfagen: the offline Metal attention-kernel compiler's command line.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "errors.h"

int main(int argc, char** argv) {
  using namespace mfagen::cli;
  CLI::App app{"mfagen: generates, checks and runs Metal attention kernels (on the CPU where there is no GPU)",
               "mfagen"};
  app.set_version_flag("--version", "mfagen " MFAGEN_VERSION);
  app.require_subcommand(1);
  app.footer("Exit status: 0 ok, 1 user error (bad arguments or inputs, kernel compile errors, detector "
             "findings), 2 internal error.\nRun `mfagen SUBCOMMAND --help` for a subcommand's options.");

  CommandAction action;
  register_generate_command(app, action);
  register_list_command(app, action);
  register_explain_command(app, action);
  register_check_command(app, action);
  register_run_command(app, action);
  register_exec_command(app, action);
  register_profile_command(app, action);
  register_tune_command(app, action);
  register_selftest_command(app, action);
  register_bench_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here as "successes" with status 0.
    int status = app.exit(e);
    return status == 0 ? kExitOk : kExitUserError;
  }

  try {
    return action ? action() : kExitInternalError;
  } catch (...) {
    return report_current_exception(fmt::format("mfagen {}", app.get_subcommands().at(0)->get_name()));
  }
}
