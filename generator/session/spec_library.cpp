#include "session/spec_library.h"

#include <stdexcept>

#include "emit/emit.h"
#include "emit/manifest.h"
#include "render/render_forward.h"
#include "session/call_error.h"
#include "spec/spec_parser.h"

namespace mfagen::session {

SpecLibrary::SpecLibrary(std::vector<plan::KernelPlan> planned, const std::filesystem::path& directory)
    : plans(std::move(planned)) {
  std::vector<std::string> rendered;
  for (const plan::KernelPlan& p : plans) {
    rendered.push_back(render::render_forward(p));
    sources[emit::kernel_file_name(p)] = rendered.back();
  }
  if (directory.empty()) {
    library = Library::load_from_memory(emit::manifest_json(plans, rendered));
    return;
  }
  emit::emit_kernels(plans, rendered, directory, {}, std::nullopt);
  library = Library::load(directory / "manifest.json");
}

SpecLibrary::SpecLibrary(std::vector<plan::KernelPlan> planned, const std::vector<std::string>& rendered)
    : plans(std::move(planned)) {
  if (rendered.size() != plans.size()) throw std::logic_error("SpecLibrary: one rendered source per plan");
  for (size_t i = 0; i < plans.size(); ++i) sources[emit::kernel_file_name(plans[i])] = rendered[i];
  library = Library::load_from_memory(emit::manifest_json(plans, rendered));
}

SpecLibrary SpecLibrary::from_spec_files(const std::vector<std::string>& files,
                                         const std::filesystem::path& directory) {
  std::vector<plan::KernelPlan> plans;
  for (const spec::KernelSpec& s : spec::load_spec_files({files.begin(), files.end()}))
    plans.push_back(plan::plan_kernel(s));
  return SpecLibrary(std::move(plans), directory);
}

const plan::KernelPlan& SpecLibrary::plan_of(const KernelEntry& k) const {
  for (const plan::KernelPlan& p : plans)
    if (p.entry == k.name) return p;
  throw std::logic_error("no plan for kernel " + k.name);
}

spec::KernelSpec forward_of(const spec::KernelSpec& backward) {
  spec::KernelSpec f = backward;
  f.kind = spec::Kind::forward;
  f.lse = true;
  f.tiles.reset();
  f.name = backward.name + "_forward";
  return f;
}

DispatchPlan dispatch_for(const KernelEntry& kernel, const ForwardCall& call) {
  try {
    return Library::plan(kernel, call);
  } catch (const DispatchError& e) {
    throw CallError(e.what());
  }
}

}  // namespace mfagen::session
