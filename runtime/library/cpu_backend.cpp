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

CpuBackend::CpuBackend(bool detectors, SourceProvider sources)
    : detectors_(detectors), sources_(sources ? std::move(sources) : SourceProvider(read_kernel_file)) {}

std::shared_ptr<const cpu::Module> CpuBackend::module(const Library& library, const KernelEntry& kernel,
                                                      RunStats& stats) {
  const std::string key = kernel.file + "#" + kernel.hash;
  std::lock_guard lock(mutex_);
  if (auto it = modules_.find(key); it != modules_.end()) return it->second;
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
