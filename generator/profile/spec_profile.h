// `mfagen profile SPEC`: one call of a spec set, made as `mfagen run` makes
// it (plan, render, in-memory manifest, the runtime's selection and
// dispatch), on synthetic inputs, with the emitted MSL compiled for
// profiling and counted on the cpu backend (docs/profile.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"
#include "profile/kernel_work.h"
#include "spec/kernel_spec.h"

namespace mfagen::profile {

struct SpecCall {
  std::string spec_file;
  plan::CostShape shape{1, 32, 8, 4096, 4096};
  // Narrow the set down, as `mfagen run --dtype/--causal` and the tensors' last dimensions do.
  std::optional<spec::DType> dtype;
  std::optional<spec::Causal> causal;
  std::optional<uint32_t> head_dim, head_dim_v;
  uint64_t sample_threadgroups = 0;  // per launch; 0: every threadgroup
  // score_mod / mask_mod kernels: captured tensors (NAME=FILE.npy) and scalars
  // (NAME=VALUE) as `mfagen run` takes them; without them the captured
  // tensors are zeros and the scalars 1 (a mask_mod then classifies blocks
  // as those zeros make it).
  std::vector<std::string> captures, scalars;
};

// Selects, plans and profiles the call; CallError if the set has no kernel for it.
KernelWork profile_spec_call(const SpecCall& call);

// One planned kernel at a call shape (`mfagen explain --profile`); the shape
// must suit the kernel (decode: at most 16 queries; no GQA: Hkv = Hq).
KernelWork profile_plan_call(const plan::KernelPlan& kernel, const plan::CostShape& shape,
                             uint64_t sample_threadgroups);

}  // namespace mfagen::profile
