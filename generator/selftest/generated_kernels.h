// Kernels generated as `mfagen generate` would (plan, render, emit: one
// .metal file each and manifest.json) into a private temporary directory,
// and loaded from there with Library::load, the way an app loads the kernels
// it vendored. Any backend can run them (the Metal backend reads the files);
// the directory is removed with this object. `mfagen selftest` and
// `mfagen bench` run their built-in kernels through it.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "io/temp_directory.h"
#include "mfagen/library.h"
#include "session/spec_library.h"
#include "spec/kernel_spec.h"

namespace mfagen::selftest {

class GeneratedKernels {
 public:
  // Specs with equal names are generated once (derived names are canonical:
  // equal names, equal kernels); manifest order is the order of first
  // appearance. `prefix` names the temporary directory.
  GeneratedKernels(const std::vector<spec::KernelSpec>& specs, std::string_view prefix);

  const Library& library() const { return set_.library; }
  const plan::KernelPlan& plan_of(const KernelEntry& kernel) const { return set_.plan_of(kernel); }
  const std::filesystem::path& directory() const { return directory_.path(); }

 private:
  io::TempDirectory directory_;
  session::SpecLibrary set_;
};

}  // namespace mfagen::selftest
