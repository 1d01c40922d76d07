// The cpu backend behind the runtime's Backend interface: compiles a
// kernel's .metal file once (cpu::compile, cached on disk and in memory) and
// runs plans with cpu::execute, every detector on unless told otherwise.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "mfagen/backend.h"
#include "mfagen/cpu/backend.h"

namespace mfagen {

class CpuBackend final : public Backend {
 public:
  // Returns the MSL of a kernel file; default: read it from the library's directory.
  using SourceProvider = std::function<std::string(const Library&, const KernelEntry&)>;

  // What the cpu backend reports by default: everything a manifest can
  // require, TensorOps included (it runs matmul2d through its Metal
  // stand-in). Pass other capabilities, e.g. kNoTensorOps, to make selection
  // fall back as on a device without them; run() then refuses kernels they
  // do not satisfy, as such a device would.
  static constexpr DeviceCapabilities kEmulatedCapabilities = DeviceCapabilities::all();
  static constexpr DeviceCapabilities kNoTensorOps{MetalVersion::v3_2, GpuFamily::apple10, false};

  explicit CpuBackend(bool detectors = true, SourceProvider sources = {},
                      DeviceCapabilities capabilities = kEmulatedCapabilities);
  std::string_view name() const override { return "cpu"; }
  DeviceCapabilities capabilities() const override { return capabilities_; }
  using Backend::run;  // the LaunchPlan overload
  RunStats run(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
               const TensorMap& tensors) override;

 private:
  std::shared_ptr<const cpu::Module> module(const Library& library, const KernelEntry& kernel, RunStats& stats);

  bool detectors_;
  SourceProvider sources_;
  DeviceCapabilities capabilities_;
  std::mutex mutex_;  // guards modules_ (compiling is not the hot path)
  std::unordered_map<std::string, std::shared_ptr<const cpu::Module>> modules_;  // by file + hash
};

// A detector finding in a generated kernel: a bug in mfagen, reported with
// every finding's text.
class KernelFindingsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mfagen
