// One threadgroup passing values around a ring through threadgroup memory:
// 32 rounds of (store, barrier, load, barrier) = 64 threadgroup barriers.
#include <metal_stdlib>
using namespace metal;

kernel void barrier_ring(device float* out [[buffer(0)]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint threads [[threads_per_threadgroup]]) {
  threadgroup float ring[1024];
  float value = float(tid);
  for (uint round = 0; round < 32; ++round) {
    ring[tid] = value;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    value = 0.5f * (value + ring[(tid + 1) % threads]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[tid] = value;
}
