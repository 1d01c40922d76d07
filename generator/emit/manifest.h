// manifest.json: what the runtime needs to pick and dispatch each generated
// kernel (DESIGN.md sections 1 and 8) without parsing any .metal file.
// Deterministic and free of paths, so that generating the same specs into
// any directory gives a byte-identical manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/kernel_plan.h"

namespace mfagen::emit {

// Version of the manifest layout; bumped when a reader would misread it.
inline constexpr int kManifestFormat = 1;

// The kernel's runtime-values struct (AttentionParams in
// templates/attention_forward.metal.mustache); its size (KernelPlan::
// params_bytes) depends on the kernel's features, so an app can check its own
// copy of the struct against the manifest.
inline constexpr const char* kParamsStruct = "AttentionParams";
inline constexpr const char* kAppendParamsStruct = "AppendParams";  // cache_append kernels

// The file a kernel is written to, relative to the output directory.
std::string kernel_file_name(const plan::KernelPlan& plan);

// The manifest text: 2-space indented JSON with keys in a fixed order and a
// final newline. `sources` are the rendered kernels, one per plan, in order.
std::string manifest_json(const std::vector<plan::KernelPlan>& plans, const std::vector<std::string>& sources);

}  // namespace mfagen::emit
