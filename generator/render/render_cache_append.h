// Render stage for cache_append kernels: a KernelPlan of kind cache_append
// becomes one self-contained MSL file, byte-identical for identical plans.
#pragma once

#include <string>

#include "plan/kernel_plan.h"

namespace mfagen::render {

std::string render_cache_append(const plan::KernelPlan& plan);

}  // namespace mfagen::render
