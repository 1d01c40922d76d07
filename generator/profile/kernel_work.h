// The cost model's input: the work one kernel call executes, as counted by
// the cpu backend's profiler (DESIGN.md section 14). Counts are what a GPU
// issues: per simdgroup, divergent paths paid for by the whole simdgroup.
// A call is one or more launches (decode: partials + combine; backward:
// preprocess, dK/dV, dQ), run in order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mfagen/cpu/profile_ops.h"

namespace mfagen::profile {

using cpu::profile::Op;
using cpu::profile::OpCounts;

// Work of a group of threadgroups that a sampled threadgroup stands for.
struct ThreadgroupClass {
  uint64_t threadgroups = 0;  // how many threadgroups of the grid this sample represents
  OpCounts ops{};             // one threadgroup's ops (sum over its simdgroups)
  OpCounts max_simdgroup_ops{};  // its busiest simdgroup's ops
  uint64_t device_bytes = 0;       // read + written by one threadgroup
  uint64_t threadgroup_bytes = 0;  // threadgroup memory read + written by one threadgroup
};

struct LaunchWork {
  std::string kernel;  // entry point
  uint32_t grid[3] = {1, 1, 1};  // threadgroups per grid
  uint32_t threads_per_threadgroup = 0;
  uint32_t simdgroups_per_threadgroup = 0;
  uint64_t threadgroup_memory_bytes = 0;  // per threadgroup: declared + [[threadgroup(n)]] buffers
  uint32_t registers_per_thread = 0;      // 32-bit registers from the kernel's structure; 0 = not stated
  uint32_t mma_chains = 0;                // independent MMA accumulator chains per simdgroup; 0 = not stated
  uint64_t threadgroups = 0;              // in the grid
  uint64_t threadgroups_run = 0;          // executed to count (the sample)
  std::string sampling;                   // how the sample was taken, in words

  OpCounts ops{};  // whole launch (extrapolated from the sample when not all threadgroups ran)
  uint64_t device_bytes_read = 0;     // requested by the kernel's loads (whole launch)
  uint64_t device_bytes_written = 0;  // requested by its stores
  uint64_t device_bytes_unique = 0;   // compulsory DRAM traffic: each bound buffer's bytes once if touched
  // Requested bytes that miss the core's L1: per threadgroup, its distinct
  // 128-byte lines read (0: not measured, then every requested byte reaches the caches)
  uint64_t device_bytes_read_past_l1 = 0;
  uint64_t threadgroup_bytes_read = 0;
  uint64_t threadgroup_bytes_written = 0;
  struct Buffer {
    uint32_t index = 0;
    uint64_t size = 0;
    uint64_t bytes_read = 0, bytes_written = 0;  // whole launch
  };
  std::vector<Buffer> buffers;
  std::vector<ThreadgroupClass> classes;  // in grid order; their threadgroups sum to `threadgroups`

  double op(Op o) const { return ops[static_cast<uint32_t>(o)]; }
};

struct KernelWork {
  std::string name;    // kernel (or spec kernel) name as shown in reports
  std::string origin;  // where it came from: a spec file, a .metal file
  std::string shape;   // the call shape in words, e.g. "B 1, Hq 32, Hkv 8, Sq 4096, Sk 4096, D 128"
  double useful_flops = 0;  // attention: 2 * visible pairs * (D + Dv); 0 = unknown (counted MMA and FMA FLOPs are used)
  // The IO model's compulsory device bytes (q, k and v read once, out and
  // lse written once: plan::forward_cost's min_device_bytes, summed over a
  // batch's sequences); 0 = not stated (peers' kernels, backward calls).
  uint64_t io_model_bytes = 0;
  std::vector<LaunchWork> launches;
};

// FLOPs the kernel executes as counted: 1024 per 8x8x8 MMA or matmul2d block
// (integer blocks count their 1024 operations), 2 per fma, 1 per add and mul
// (float and half).
double counted_flops(const LaunchWork& launch);

}  // namespace mfagen::profile
