// Runs a helper program (clang) and captures what it prints.
#pragma once

#include <string>
#include <vector>

namespace mfagen::cpu {

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved as written
};

// Runs argv[0] (searched in PATH) with stdin from /dev/null.
ProcessResult run_process(const std::vector<std::string>& argv);

}  // namespace mfagen::cpu
