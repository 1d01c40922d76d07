// The mfagen subcommands. Each lives in its own <name>_command.cpp and
// registers itself on the top-level app; main() runs the one that was chosen.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace mfagen::cli {

// Set by the chosen subcommand's parse callback: what to run once the whole
// command line parsed. Returns the exit status (see errors.h).
using CommandAction = std::function<int()>;

// `mfagen exec FILE.metal ...`: run any Metal kernel on the CPU with .npy buffers.
void register_exec_command(CLI::App& app, CommandAction& action);
// `mfagen run SPEC --q Q.npy --k K.npy --v V.npy --out-dir DIR`: a generated kernel on tensors.
void register_run_command(CLI::App& app, CommandAction& action);
// `mfagen generate SPEC... -o DIR`: spec files -> .metal kernels, manifest.json, depfile.
void register_generate_command(CLI::App& app, CommandAction& action);
// `mfagen list SPEC|MANIFEST...`: the kernels of spec files or of a manifest.
void register_list_command(CLI::App& app, CommandAction& action);
// `mfagen explain SPEC...`: each kernel's plan and its cost for a call shape.
void register_explain_command(CLI::App& app, CommandAction& action);
// `mfagen profile SPEC...`: predicted time per Apple GPU from work counted on the cpu backend.
void register_profile_command(CLI::App& app, CommandAction& action);
// `mfagen tune SPEC...`: each kernel's tiles chosen by a search over the profile.
void register_tune_command(CLI::App& app, CommandAction& action);
// `mfagen selftest [--backend cpu|metal] [--report F]`: the built-in correctness matrix against float64.
void register_selftest_command(CLI::App& app, CommandAction& action);
// `mfagen bench [--backend cpu|metal] [--chip C]`: built-in kernels timed beside the model's prediction.
void register_bench_command(CLI::App& app, CommandAction& action);
// `mfagen check FILE.metal... [--manifest M]`: clang (in-process) verification of Metal kernels.
void register_check_command(CLI::App& app, CommandAction& action);

}  // namespace mfagen::cli
