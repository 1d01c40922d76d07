// Render stage for forward kernels: a KernelPlan becomes one self-contained
// MSL file (templates/attention_forward.metal.mustache), byte-identical for
// identical plans.
#pragma once

#include <string>

#include "plan/kernel_plan.h"

namespace mfagen::render {

inline constexpr const char* kForwardTemplate = "attention_forward.metal.mustache";
inline constexpr const char* kBackwardTemplate = "attention_backward.metal.mustache";
// Forward kernels whose products run on Metal 4 TensorOps (plan.tensor_ops).
inline constexpr const char* kTensorOpsForwardTemplate = "attention_forward_tensor_ops.metal.mustache";
// Cache writes (kind cache_append, render_cache_append.h).
inline constexpr const char* kCacheAppendTemplate = "cache_append.metal.mustache";

// Renders any planned kernel: forward and decode kernels from the forward
// template (TensorOps forward kernels from their own), backward kernels
// (three entry points) from the backward one, cache_append kernels from theirs.
std::string render_forward(const plan::KernelPlan& plan);
// The template a plan renders with, and its version.
const char* kernel_template(const plan::KernelPlan& plan);
std::string kernel_template_version(const plan::KernelPlan& plan);

// The version string recorded in generated headers and the manifest.
std::string forward_template_version();
// The content hash of a plan's canonical spec and its template's version.
std::string forward_kernel_hash(const plan::KernelPlan& plan);

}  // namespace mfagen::render
