// `mfagen bench`: times generated kernels through the chosen backend beside
// the cost model's prediction of the same call for one chip, as a report to
// paste into an issue. On a Mac with --backend metal the measured times are
// GPU timestamps; anywhere else (the cpu backend, the Metal stand-in) they
// are an emulation's and say so, so that the command's logic runs and is
// tested where there is no Apple GPU without passing off its times as GPU
// figures.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "profile/calibration.h"
#include "backend_choice.h"
#include "commands.h"
#include "errors.h"
#include "io/atomic_file.h"
#include "profile/chip.h"
#include "profile_output.h"
#include "selftest/bench_report.h"
#include "selftest/bench_run.h"
#include "selftest/machine_info.h"
#include "text_table.h"

namespace mfagen::cli {
namespace {

// Without --chip: this Mac's chip when the model has a table for it.
constexpr const char* kFallbackChip = "m3_max";

struct BenchArgs {
  std::string backend = "cpu";
  std::string chip;
  std::string report;
  bool quick = false;
  std::string size;  // small | large; empty: large where the backend measures GPU time, else small
  uint32_t repeats = 5;
  uint64_t sample = kDefaultProfileSample;
};

struct ChosenChip {
  profile::Chip chip;
  std::string why;  // "--chip", "this machine's chip", "default"
};

ChosenChip choose_chip(const std::string& option) {
  if (!option.empty()) {
    try {
      return {profile::find_chip(option), "--chip"};
    } catch (const std::invalid_argument& e) {
      throw UserError(fmt::format("--chip {}: {}", option, e.what()));
    }
  }
  std::string here = selftest::apple_chip_name();  // "Apple M3 Max"
  if (here.rfind("Apple ", 0) == 0) here.erase(0, 6);
  if (!here.empty()) {
    try {
      return {profile::find_chip(here), "this machine's chip"};
    } catch (const std::invalid_argument&) {
      // A chip the model has no table for: fall back to the default.
    }
  }
  return {profile::find_chip(kFallbackChip), "default; choose with --chip"};
}

// Without --size: GPU-sized shapes only where a GPU runs them; an emulation
// would take hours over them.
selftest::BenchSize parse_size(const std::string& size, const Backend& backend) {
  if (size.empty()) return backend.measures_gpu_time() ? selftest::BenchSize::large : selftest::BenchSize::small;
  if (size == "small") return selftest::BenchSize::small;
  if (size == "large") return selftest::BenchSize::large;
  throw UserError(fmt::format("--size {}: expected small or large", size));
}

std::string command_line(const BenchArgs& a) {
  std::string line = "mfagen bench --backend " + a.backend;
  if (!a.chip.empty()) line += " --chip " + a.chip;
  if (a.quick) line += " --quick";
  if (!a.size.empty()) line += " --size " + a.size;
  line += fmt::format(" --repeat {} --sample {}", a.repeats, a.sample);
  if (!a.report.empty()) line += " --report " + a.report;
  return line;
}

int run_bench_command(const BenchArgs& args) {
  check_backend_name(args.backend);
  const ChosenChip chip = choose_chip(args.chip);
  if (args.repeats == 0) throw UserError("--repeat 0: expected at least 1 timed run");
  // Timing: the cpu backend runs without its detectors, which would dominate.
  const std::unique_ptr<Backend> backend = make_backend(args.backend, false);
  selftest::BenchOptions options;
  options.size = parse_size(args.size, *backend);
  options.repeats = args.repeats;
  options.chip = chip.chip;
  options.sample_threadgroups = args.sample;
  const std::string backend_text = describe_backend(*backend, false);
  const selftest::BenchLabels labels{
      measured_time_label(*backend),
      fmt::format("model prediction for {} ({}) by mfagen's cost model (docs/cost_model.md), not a measurement; "
                  "calibration: {}",
                  chip.chip.name, chip.why, profile::band_text(chip.chip.name, profile::Bound::compute)),
      backend->measures_gpu_time()};

  const std::vector<selftest::BenchCase> cases = selftest::builtin_bench(args.quick);
  const std::vector<selftest::BenchResult> results =
      selftest::run_bench(cases, *backend, options, [](const selftest::BenchResult& r) {
        fmt::print(stderr, "mfagen bench: {}: {}\n", r.name, r.error.empty() ? "timed and predicted" : "failed");
      });
  fmt::print("mfagen bench: {}backend: {}\n\n{}",
             selftest::bench_preamble(results, options, labels, std::string(backend->name())), backend_text,
             format_table(selftest::bench_rows(results, labels)));

  if (!args.report.empty()) {
    const selftest::ReportContext context{MFAGEN_VERSION, selftest::describe_machine(), backend_text,
                                          command_line(args)};
    try {
      io::write_file_atomic(args.report, selftest::bench_markdown(results, options, labels, context));
    } catch (const std::system_error& e) {
      throw UserError(fmt::format("--report {}: cannot write the report: {}", args.report, e.what()));
    }
    fmt::print("wrote {}\n", args.report);
  }
  for (const selftest::BenchResult& r : results)
    if (!r.error.empty()) return kExitUserError;
  return kExitOk;
}

}  // namespace

void register_bench_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Time generated kernels beside the cost model's prediction");
  cmd->footer(
      "Generates a built-in set of kernels (Llama 3 prefill and decode, an encoder, a Gemma-style\n"
      "sliding window, a causal backward), loads them as an app would and times each through the\n"
      "backend: one warm-up run, then --repeat timed runs (median and best), on the synthetic inputs\n"
      "`mfagen profile` counts. Beside each: the cost model's predicted time of the same call for one\n"
      "chip and measured/predicted. Shapes: --size large (the default on an Apple GPU) are realistic\n"
      "GPU workloads (4096-token prefill, 8192-key decode, ...); --size small (the default elsewhere)\n"
      "are a fraction of them that the cpu backend runs in seconds.\n"
      "Times measured by the cpu backend (or a Metal stand-in) are an EMULATION, never GPU figures;\n"
      "on a Mac, --backend metal measures GPU time with command buffer timestamps. Predicted times\n"
      "are always a MODEL PREDICTION.\n\n"
      "Examples:\n"
      "  mfagen bench --backend metal --report bench.md      # on a Mac: GPU times vs. the model\n"
      "  mfagen bench --quick\n\n"
      "Exit status: 0 ok, 1 a kernel could not be timed (or a bad option), 2 internal error.");
  cmd->add_option("--backend", args->backend, "cpu (default) or metal (builds with the Metal backend)")
      ->type_name("cpu|metal");
  cmd->add_option("--chip", args->chip, "the chip predicted for (default: this Mac's, else M3 Max)")
      ->type_name("NAME");
  cmd->add_option("--report", args->report, "also write a Markdown report here (atomically)")->type_name("FILE");
  cmd->add_flag("--quick", args->quick, "two kernels (prefill and decode)");
  cmd->add_option("--size", args->size, "shapes: small (default) or large (default on an Apple GPU)")
      ->type_name("small|large");
  cmd->add_option("--repeat", args->repeats, "timed runs per kernel (default 5)")->type_name("N");
  cmd->add_option("--sample", args->sample, "threadgroups the prediction's profile executes per launch (0: all)")
      ->type_name("N");
  cmd->callback([args, &action] { action = [args] { return run_bench_command(*args); }; });
}

}  // namespace mfagen::cli
