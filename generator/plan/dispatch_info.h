// What the runtime needs to launch a planned kernel (runtime/dispatch),
// taken from its plan: the same facts manifest.json records.
#pragma once

#include "mfagen/forward_dispatch.h"
#include "plan/kernel_plan.h"

namespace mfagen::plan {

ForwardKernelInfo forward_kernel_info(const KernelPlan& plan);

// How a spec's k and v are stored, as the runtime names it (elements unless
// kv_dtype is q8_0, q4_0 or fp8_e4m3).
KvFormat kv_format(const spec::KernelSpec& spec);

// Device bytes of one key's k and v rows (D and Dv values) as stored.
uint64_t kv_key_bytes(const spec::KernelSpec& spec);

}  // namespace mfagen::plan
