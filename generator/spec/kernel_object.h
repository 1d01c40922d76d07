// One kernel object of a spec file -> the kernels it stands for. A field
// given as a list contributes each of its values; the result is the
// cartesian product over the fields in the table order of DESIGN.md section
// 2 (kind, dtype, head_dim, head_dim_v, causal, gqa, mask, window, softcap,
// alibi, sinks, layout, kv_cache, kv_dtype, dropout, score_mod, mask_mod, lse, accumulate, tiles, target) with the LAST field varying fastest,
// like nested loops written in that order.
#pragma once

#include <vector>

#include "spec/json_values.h"
#include "spec/kernel_spec.h"

namespace mfagen::spec::detail {

// More than this from one object is almost surely a mistake (and would
// otherwise run out of memory before saying so).
inline constexpr uint64_t kMaxKernelsPerObject = 100000;

// `at` is the object's place ("kernels[2]", or "" for a single-kernel file);
// it becomes each kernel's origin. Names are given or derived; uniqueness
// across objects is checked by the caller.
std::vector<KernelSpec> expand_kernel_object(const Json& object, const Where& at);

}  // namespace mfagen::spec::detail
