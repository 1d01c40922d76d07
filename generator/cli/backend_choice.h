// `--backend cpu|metal`: the backend a command runs kernels through, and
// what its measured times are (a GPU's, or an emulation's), so that no
// report passes an emulated time off as a GPU figure.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "mfagen/backend.h"

namespace mfagen::cli {

// "cpu": the generated MSL compiled as C++ and run on this CPU with Metal's
// semantics (`detectors`: out-of-bounds, races, barrier divergence,
// uninitialized reads). "metal": mfagen::MetalBackend where this build has
// it (on an Apple GPU, or on the metal-cpp stand-in elsewhere; detectors do
// not apply). Anything else, or metal in a build without it, is a UserError.
std::unique_ptr<Backend> make_backend(std::string_view name, bool detectors);

// UserError unless `name` is cpu or metal: for commands that check their
// options before anything slow runs.
void check_backend_name(std::string_view name);

// For reports: which backend, and on what it runs.
std::string describe_backend(const Backend& backend, bool detectors);

// What the backend's RunStats::seconds are: "GPU time (Metal command
// buffer timestamps)" when it measures a GPU, otherwise "emulation (cpu
// backend), not a GPU time" or "emulation (Metal stand-in), not a GPU time".
std::string measured_time_label(const Backend& backend);

}  // namespace mfagen::cli
