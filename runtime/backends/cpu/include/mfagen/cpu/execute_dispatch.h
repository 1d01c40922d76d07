// The cpu backend's side of DESIGN.md section 8: executes a DispatchPlan
// (runtime/dispatch) with the caller's tensors, as the Metal backend would
// encode it: scratch buffers allocated for the call, the params buffer bound,
// every launch run in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "mfagen/cpu/backend.h"
#include "mfagen/forward_dispatch.h"

namespace mfagen::cpu {

struct DispatchResult {
  std::vector<LaunchResult> launches;  // one per plan launch, in order
  uint64_t findings_total() const;
  bool clean() const { return findings_total() == 0; }
  double seconds() const;
  // Bytes each user buffer (by index) was read and written, over all launches.
  std::map<uint32_t, BufferTraffic> traffic() const;
};

// `tensors` holds every non-scratch buffer of the plan except params, each at
// least as large as the plan requires (LaunchError otherwise). With
// `profile.enabled` (a module compiled for profiling) each launch's
// LaunchResult carries its profile. `tensor_layout_seed` permutes the
// layout of cooperative tensors (LaunchOptions::tensor_layout_seed).
DispatchResult execute(const Module& module, const DispatchPlan& plan,
                       const std::map<uint32_t, std::span<std::byte>>& tensors, const Detectors& detectors = {},
                       const ProfileOptions& profile = {}, uint32_t tensor_layout_seed = 0);

}  // namespace mfagen::cpu
