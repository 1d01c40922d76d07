// The -cc1 command line of a check, from clang's driver once per set of
// driver flags rather than once per file: checks differ only in their input
// file, and running the driver was a twentieth of a check's time.
#pragma once

#include <string>
#include <vector>

namespace mfagen::check {

// {"mfagen-check", "-cc1", ...}: what the driver makes of `driver_flags`
// (the clang command line without the program name and the input) for the
// input `main_path`, which ToolInvocation runs without the driver. Empty when
// the driver fails; the caller then runs the driver command line, whose
// diagnostics say why.
std::vector<std::string> cc1_command_line(const std::vector<std::string>& driver_flags, const std::string& main_path);

}  // namespace mfagen::check
