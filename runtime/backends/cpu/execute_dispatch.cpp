#include "mfagen/cpu/execute_dispatch.h"

#include <fmt/format.h>

namespace mfagen::cpu {

uint64_t DispatchResult::findings_total() const {
  uint64_t n = 0;
  for (const LaunchResult& r : launches) n += r.findings_total;
  return n;
}

double DispatchResult::seconds() const {
  double s = 0;
  for (const LaunchResult& r : launches) s += r.seconds;
  return s;
}

std::map<uint32_t, BufferTraffic> DispatchResult::traffic() const {
  std::map<uint32_t, BufferTraffic> total;
  for (const LaunchResult& r : launches)
    for (const BufferTraffic& t : r.traffic) {
      BufferTraffic& sum = total[t.index];
      sum.index = t.index;
      sum.bytes_read += t.bytes_read;
      sum.bytes_written += t.bytes_written;
    }
  return total;
}

DispatchResult execute(const Module& module, const DispatchPlan& plan,
                       const std::map<uint32_t, std::span<std::byte>>& tensors, const Detectors& detectors,
                       const ProfileOptions& profile, uint32_t tensor_layout_seed) {
  std::map<uint32_t, std::span<std::byte>> bound;
  std::vector<std::vector<std::byte>> scratch;
  std::vector<std::byte> params = plan.params;  // kernels read it through a constant reference
  for (const BufferRequirement& b : plan.buffers) {
    if (b.index == kForwardParams) {
      bound[b.index] = params;
    } else if (b.scratch) {
      bound[b.index] = scratch.emplace_back(b.bytes);
    } else {
      auto given = tensors.find(b.index);
      if (given == tensors.end())
        throw LaunchError(fmt::format("buffer {} ({}) is missing: the plan needs {} bytes", b.index, b.name, b.bytes));
      if (given->second.size() < b.bytes)
        throw LaunchError(fmt::format("buffer {} ({}) has {} bytes; the plan needs {}", b.index, b.name,
                                      given->second.size(), b.bytes));
      // Bound at exactly the planned size, so a kernel reaching past the
      // tensor's extent is an out-of-bounds finding.
      bound[b.index] = given->second.first(b.bytes);
    }
  }
  DispatchResult result;
  for (const KernelLaunch& l : plan.launches) {
    LaunchOptions options;
    options.threadgroups = {l.threadgroups[0], l.threadgroups[1], l.threadgroups[2]};
    options.threads_per_threadgroup = {l.threads_per_threadgroup[0], l.threads_per_threadgroup[1],
                                       l.threads_per_threadgroup[2]};
    options.detectors = detectors;
    options.profile = profile;
    options.tensor_layout_seed = tensor_layout_seed;
    for (const std::string& whole : profile.unsampled_entries)
      if (l.entry == whole) options.profile.sample_threadgroups = 0;
    for (uint32_t index : l.buffers) options.buffers.push_back({index, bound.at(index)});
    result.launches.push_back(launch(module, l.entry, options));
  }
  return result;
}

}  // namespace mfagen::cpu
