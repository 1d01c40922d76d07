#include "jit_kernels.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "plan/kernel_plan.h"
#include "spec/canonical.h"
#include "spec/spec_parser.h"

namespace mfagen::python {
namespace {

// Detectors (out-of-bounds, races, uninitialized reads) make the emulation
// several times slower; a user turns them on to report a kernel bug.
bool detectors_requested() {
  const char* value = std::getenv("MFAGEN_DETECTORS");
  return value && *value && std::strcmp(value, "0") != 0;
}

}  // namespace

bool jit_disabled() {
  const char* value = std::getenv("MFAGEN_DISABLE_JIT");
  return value && *value && std::strcmp(value, "0") != 0;
}

JitKernels::JitKernels() {
  backend_ = std::make_unique<CpuBackend>(detectors_requested(), [this](const Library&, const KernelEntry& kernel) {
    std::lock_guard lock(mutex_);
    return sources_.at(kernel.file);
  });
  if (const char* name = std::getenv("MFAGEN_BACKEND"); name && std::strcmp(name, "record") == 0)
    recording_ = std::make_unique<RecordingBackend>();
}

const session::SpecLibrary& JitKernels::kernels(const std::string& spec_json) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_spec_.find(spec_json); it != by_spec_.end()) return *it->second;
  }
  std::vector<spec::KernelSpec> specs = spec::parse_spec_text(spec_json, "<variant>");
  if (specs.size() != 1) throw std::logic_error("a variant is one kernel spec: " + spec_json);
  const std::string name = spec::derived_name(specs.front());
  std::unique_ptr<session::SpecLibrary> set;
  {
    std::lock_guard lock(mutex_);
    if (auto it = ahead_of_time_.find(name); it != ahead_of_time_.end())
      set = std::make_unique<session::SpecLibrary>(std::vector<plan::KernelPlan>{it->second.plan},
                                                   std::vector<std::string>{it->second.source});
  }
  if (!set && jit_disabled())
    throw MissingKernelError(fmt::format(
        "kernel {} is not available and MFAGEN_DISABLE_JIT forbids generating it at run time; generate it ahead "
        "of time (mfagen generate) from the spec {} and load the output with mfagen.Library(\"DIR/manifest.json\")",
        name, spec_json));
  // Generated outside the lock: planning and rendering take milliseconds and
  // two threads racing on one variant make identical sets (one is kept).
  if (!set)
    set = std::make_unique<session::SpecLibrary>(std::vector<plan::KernelPlan>{plan::plan_kernel(specs.front())});
  std::lock_guard lock(mutex_);
  auto [it, inserted] = by_spec_.emplace(spec_json, nullptr);
  if (inserted) {
    for (const auto& [file, source] : set->sources) sources_.emplace(file, source);
    it->second = std::move(set);
  }
  return *it->second;
}

std::vector<std::string> JitKernels::load_library(const std::filesystem::path& manifest) {
  std::map<std::string, AotKernel> loaded = load_aot_kernels(manifest);
  std::vector<std::string> names;
  std::lock_guard lock(mutex_);
  for (auto& [name, kernel] : loaded) {
    names.push_back(kernel.plan.entry);
    ahead_of_time_.insert_or_assign(name, std::move(kernel));
  }
  return names;
}

std::vector<std::string> JitKernels::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [text, set] : by_spec_)
    for (const KernelEntry& k : set->library.kernels()) out.push_back(k.name);
  return out;
}

}  // namespace mfagen::python
