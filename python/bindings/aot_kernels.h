// Kernels generated ahead of time (DESIGN.md section 16): the output of
// `mfagen generate` (manifest.json and its .metal files) loaded by
// mfagen.Library. A call's variant is served from here, by the derived name
// of its spec, before anything is generated; MFAGEN_DISABLE_JIT=1 then
// allows exactly these kernels.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/kernel_plan.h"
#include "spec/kernel_spec.h"

namespace mfagen::python {

struct AotKernel {
  plan::KernelPlan plan;
  std::string source;            // the generated file, as written
  std::filesystem::path manifest;  // where it came from
};

// Every kernel of `manifest`: its canonical spec (recorded in the manifest)
// planned again, checked against the recorded content hash (a manifest of
// another generator version is refused, naming the kernel), with its file.
// Keyed by the spec's derived name (the variant's identity: every field).
std::map<std::string, AotKernel> load_aot_kernels(const std::filesystem::path& manifest);

}  // namespace mfagen::python
