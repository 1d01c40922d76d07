// Exit statuses and error reporting shared by every subcommand.
#pragma once

#include <stdexcept>
#include <string_view>

namespace mfagen::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitUserError = 1,      // bad arguments or input files, kernel compile errors, detector findings
  kExitInternalError = 2,  // a bug or an environment failure in mfagen itself
};

// A problem the user can fix; the message says what and, where useful, how.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Prints the exception in flight to stderr, prefixed with `command`, and
// returns the exit status for it: 1 for the project's user-error types
// (UserError, spec errors, .npy and file-read errors, kernel compile and launch errors),
// 2 otherwise.
// Call only from a catch block.
int report_current_exception(std::string_view command);

}  // namespace mfagen::cli
