#include "errors.h"

#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "io/npy.h"
#include "io/text_file.h"
#include "mfagen/cpu/backend.h"
#include "session/call_error.h"
#include "spec/kernel_spec.h"

namespace mfagen::cli {

int report_current_exception(std::string_view command) {
  // The one place that decides which exception types are the user's doing;
  // new subcommands add their input-error types here.
  try {
    throw;
  } catch (const cpu::CompileError& e) {
    // Clang's diagnostics already name the kernel file and line.
    fmt::print(stderr, "{}: compile error:\n{}\n", command, e.what());
    return kExitUserError;
  } catch (const spec::SpecError& e) {
    // what() is "FILE: JSON PATH: MESSAGE", everything the user needs to fix the spec.
    fmt::print(stderr, "{}: error: {}\n", command, e.what());
    return kExitUserError;
  } catch (const session::CallError& e) {
    fmt::print(stderr, "{}: error: {}\n", command, e.what());
    return kExitUserError;
  } catch (const UserError& e) {
    fmt::print(stderr, "{}: error: {}\n", command, e.what());
    return kExitUserError;
  } catch (const io::NpyError& e) {
    fmt::print(stderr, "{}: error: {}\n", command, e.what());
    return kExitUserError;
  } catch (const io::ReadError& e) {
    fmt::print(stderr, "{}: error: {}\n", command, e.what());
    return kExitUserError;
  } catch (const cpu::LaunchError& e) {
    fmt::print(stderr, "{}: error: {}\n", command, e.what());
    return kExitUserError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: internal error: {}\n", command, e.what());
    return kExitInternalError;
  } catch (...) {
    fmt::print(stderr, "{}: internal error: unknown exception\n", command);
    return kExitInternalError;
  }
}

}  // namespace mfagen::cli
