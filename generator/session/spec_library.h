// A spec set as an app's runtime sees it: every kernel planned and rendered
// exactly as `mfagen generate` would, behind a manifest (mfagen::Library),
// with the MSL kept in memory for the cpu backend. Given a directory, the
// kernels and manifest.json are also written there, as `mfagen generate`
// writes them, and the library is loaded from that manifest, so that any
// backend (the Metal backend reads kernel files) can run them.
// `mfagen run`, `mfagen profile`, `mfagen selftest` and `mfagen bench` make
// their calls through it.
#pragma once

#include <filesystem>
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

  // `directory` empty: the manifest stays in memory (library.directory() is
  // empty, so only a backend given the sources can run it). Otherwise the
  // directory is created if needed and written (std::system_error on I/O
  // failure).
  explicit SpecLibrary(std::vector<plan::KernelPlan> planned, const std::filesystem::path& directory = {});
  // Kernels already rendered (`rendered[i]` is the MSL of `planned[i]`,
  // e.g. read from an `mfagen generate` output): kept in memory as they are.
  SpecLibrary(std::vector<plan::KernelPlan> planned, const std::vector<std::string>& rendered);
  // Every kernel of the spec files, planned.
  static SpecLibrary from_spec_files(const std::vector<std::string>& files,
                                     const std::filesystem::path& directory = {});

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
