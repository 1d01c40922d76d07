// A spec set as an app's runtime sees it: every kernel planned and rendered
// exactly as `mfagen generate` would, behind an in-memory manifest
// (mfagen::Library), with the MSL kept in memory for the cpu backend.
// `mfagen run` and `mfagen profile` make their calls through it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mfagen/library.h"
#include "plan/kernel_plan.h"
#include "spec/kernel_spec.h"

namespace mfagen::session {

struct SpecLibrary {
  std::vector<plan::KernelPlan> plans;
  std::map<std::string, std::string> sources;  // MSL by kernel file name
  Library library;

  explicit SpecLibrary(std::vector<plan::KernelPlan> planned);
  // Every kernel of the spec files, planned.
  static SpecLibrary from_spec_files(const std::vector<std::string>& files);

  const plan::KernelPlan& plan_of(const KernelEntry& kernel) const;
  const std::string& source_of(const KernelEntry& kernel) const { return sources.at(kernel.file); }
};

// The forward kernel a backward spec's gradients are taken through: the
// same features, with lse, from the planner's tile table.
spec::KernelSpec forward_of(const spec::KernelSpec& backward);

// The plan for a call, with a DispatchError (bad strides, shape over the
// kernel's limits) turned into a CallError.
DispatchPlan dispatch_for(const KernelEntry& kernel, const ForwardCall& call);

}  // namespace mfagen::session
