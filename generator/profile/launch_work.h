// The cpu backend's counts of one launch (cpu::LaunchProfile) as the cost
// model's input (LaunchWork).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mfagen/cpu/backend.h"
#include "profile/kernel_work.h"

namespace mfagen::profile {

struct LaunchShape {
  std::string kernel;
  cpu::Dim3 threadgroups, threads_per_threadgroup;
  std::vector<std::pair<uint32_t, uint64_t>> buffer_sizes;  // (index, bytes) of every bound buffer
};

LaunchWork to_launch_work(const LaunchShape& shape, const cpu::LaunchProfile& counted);

}  // namespace mfagen::profile
