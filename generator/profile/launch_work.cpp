#include "profile/launch_work.h"

#include <algorithm>

namespace mfagen::profile {

LaunchWork to_launch_work(const LaunchShape& shape, const cpu::LaunchProfile& p) {
  LaunchWork w;
  w.kernel = shape.kernel;
  w.grid[0] = shape.threadgroups.x, w.grid[1] = shape.threadgroups.y, w.grid[2] = shape.threadgroups.z;
  w.threads_per_threadgroup = static_cast<uint32_t>(shape.threads_per_threadgroup.volume());
  w.simdgroups_per_threadgroup = p.simdgroups_per_threadgroup;
  w.threadgroup_memory_bytes = p.threadgroup_memory_bytes;
  // Registers come from the kernel's structure (the planner's fragments, or a
  // peer's tiles through `mfagen exec --registers`), not from the IR liveness
  // estimate of the x86 compile, which knows nothing of the GPU's allocation.
  w.registers_per_thread = 0;
  w.threadgroups = p.threadgroups;
  w.threadgroups_run = p.samples.size();
  w.sampling = p.sampling;
  w.ops = p.ops;
  w.threadgroup_bytes_read = p.threadgroup_bytes_read;
  w.device_bytes_read_past_l1 = p.device_bytes_read_past_l1;
  w.threadgroup_bytes_written = p.threadgroup_bytes_written;
  for (const cpu::BufferTraffic& t : p.traffic) {
    uint64_t size = 0;
    for (auto [index, bytes] : shape.buffer_sizes)
      if (index == t.index) size = bytes;
    w.buffers.push_back({t.index, size, t.bytes_read, t.bytes_written});
    w.device_bytes_read += t.bytes_read;
    w.device_bytes_written += t.bytes_written;
    // Compulsory DRAM traffic: what the launch touches of each buffer, once
    // (re-reads are assumed to hit in the GPU's caches; docs/cost_model.md).
    w.device_bytes_unique += std::min(size, t.bytes_read) + std::min(size, t.bytes_written);
  }
  for (const cpu::ThreadgroupProfile& s : p.samples) {
    ThreadgroupClass c;
    c.threadgroups = s.represents;
    c.ops = s.ops;
    c.max_simdgroup_ops = s.busiest_simdgroup;
    for (const cpu::BufferTraffic& t : s.traffic) c.device_bytes += t.bytes_read + t.bytes_written;
    c.threadgroup_bytes = s.threadgroup_bytes_read + s.threadgroup_bytes_written;
    w.classes.push_back(c);
  }
  return w;
}

}  // namespace mfagen::profile
