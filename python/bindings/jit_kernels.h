// The kernels of the Python package (DESIGN.md section 16): a call's variant
// arrives as the JSON text of one kernel spec; the first call of a variant
// plans and renders it in-process through the generator library and keeps
// it, so later calls are a dictionary lookup. The cpu backend compiles each
// kernel once per process and caches the object on disk by content hash (an
// atomic rename: concurrent processes compiling the same kernel are safe).
// Kernels of `mfagen generate` outputs loaded with load_library() serve their
// variants first. MFAGEN_DISABLE_JIT=1 forbids generating (deploy mode): a
// variant no loaded library has is a MissingKernelError naming it and the
// spec that would provide it.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "aot_kernels.h"
#include "mfagen/cpu_backend.h"
#include "recording_backend.h"
#include "session/spec_library.h"

namespace mfagen::python {

class MissingKernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class JitKernels {
 public:
  JitKernels();
  // The one-kernel set of `spec_json`: from a loaded ahead-of-time library
  // when one has the variant, else generated on its first request.
  const session::SpecLibrary& kernels(const std::string& spec_json);
  // Serves later calls from the kernels of an `mfagen generate` manifest;
  // returns their names.
  std::vector<std::string> load_library(const std::filesystem::path& manifest);
  // The variants generated so far, by kernel name.
  std::vector<std::string> names() const;
  // The cpu backend, or with MFAGEN_BACKEND=record one that launches nothing (benchmarks).
  Backend& backend() { return recording_ ? static_cast<Backend&>(*recording_) : *backend_; }
  // Runs the recording backend was given (0 without it).
  uint64_t recorded_runs() const { return recording_ ? recording_->runs() : 0; }

 private:
  mutable std::mutex mutex_;  // guards the maps; kernels are immutable once made
  std::unordered_map<std::string, std::unique_ptr<session::SpecLibrary>> by_spec_;
  std::map<std::string, AotKernel> ahead_of_time_;         // by derived name
  std::unordered_map<std::string, std::string> sources_;  // MSL by kernel file name (unique: it carries the hash)
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<RecordingBackend> recording_;
};

// Whether MFAGEN_DISABLE_JIT is set to anything but "" or "0".
bool jit_disabled();

}  // namespace mfagen::python
