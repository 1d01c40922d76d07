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

}  // namespace mfagen::cli
