// What the runtime needs to launch a planned kernel (runtime/dispatch),
// taken from its plan: the same facts manifest.json records.
#pragma once

#include "mfagen/forward_dispatch.h"
#include "plan/kernel_plan.h"

namespace mfagen::plan {

ForwardKernelInfo forward_kernel_info(const KernelPlan& plan);

}  // namespace mfagen::plan
