#include "mfagen/cpu_backend.h"

#include <fstream>
#include <sstream>

#include "mfagen/call_trace.h"
#include "mfagen/cpu/execute_dispatch.h"

namespace mfagen {

namespace {

std::string read_kernel_file(const Library& library, const KernelEntry& kernel) {
  const std::filesystem::path path = library.directory() / kernel.file;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ManifestError("cannot read kernel file " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CpuBackend::CpuBackend(bool detectors, SourceProvider sources, DeviceCapabilities capabilities)
    : detectors_(detectors), sources_(sources ? std::move(sources) : SourceProvider(read_kernel_file)),
      capabilities_(capabilities) {}

std::shared_ptr<const cpu::Module> CpuBackend::module(const Library& library, const KernelEntry& kernel,
                                                      RunStats& stats) {
  const std::string key = kernel.file + "#" + kernel.hash;
  std::lock_guard lock(mutex_);
  if (auto it = modules_.find(key); it != modules_.end()) return it->second;
  // Checked once per kernel, when it is compiled: a device without what the
  // kernel requires could not compile it either.
  if (!capabilities_.satisfies(kernel.requirements))
    throw std::invalid_argument("cpu backend: " + kernel.name + " requires Metal " +
                                std::string(to_string(kernel.requirements.metal)) + ", GPU family " +
                                std::string(to_string(kernel.requirements.gpu_family)) +
                                (kernel.requirements.tensor_ops ? " and TensorOps" : "") +
                                ", more than this backend reports (Metal " +
                                std::string(to_string(capabilities_.metal)) + ", GPU family " +
                                std::string(to_string(capabilities_.gpu_family)) +
                                (capabilities_.tensor_ops ? ", TensorOps" : ", no TensorOps") +
                                "); select with library.select(query, backend.capabilities())");
  cpu::CompileOptions options;
  options.instrument = detectors_;
  cpu::CompileStats compile;
  auto m = cpu::compile(sources_(library, kernel), kernel.file, options, &compile);
  stats.compile_seconds = compile.seconds;
  modules_.emplace(key, m);
  return m;
}

RunStats CpuBackend::run(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
                         const TensorMap& tensors) {
  RunStats stats;
  auto m = module(library, kernel, stats);
  trace_call(kernel, plan.shape, name());  // compiled: the call runs
  cpu::Detectors detectors;
  if (!detectors_) detectors = {false, false, false, false};
  const cpu::DispatchResult result = cpu::execute(*m, plan, tensors, detectors);
  if (!result.clean()) {
    std::string text = std::to_string(result.findings_total()) + " detector finding(s) in generated kernel " +
                       kernel.name + ":";
    for (const cpu::LaunchResult& l : result.launches)
      for (const cpu::Finding& f : l.findings) text.append("\n").append(f.to_string());
    throw KernelFindingsError(text);
  }
  stats.seconds = result.seconds();
  return stats;
}

}  // namespace mfagen
