// Runs a program to completion and captures its exit status and output, for
// tests that drive the built `mfagen` binary the way a user does.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mfagen::test {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal number if the process was killed
  std::string out;     // stdout
  std::string err;     // stderr
};

// argv[0] is the program path. Output is captured through files in `scratch`.
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& scratch);

}  // namespace mfagen::test
