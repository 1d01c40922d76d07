// Threadgroup data race: the barrier between the write and the neighbour's
// read only fences device memory (mem_flags::mem_device), so it does not
// order the threadgroup accesses. The twin fences threadgroup memory.
#include <metal_stdlib>
using namespace metal;

kernel void swap_pairs_device_fence(device const float* x [[buffer(0)]],
                                    device float* y [[buffer(1)]],
                                    uint tid [[thread_index_in_threadgroup]],
                                    uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[64];
  tile[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_device);
  y[gid] = tile[tid ^ 1];  // MARK: bug
}

kernel void swap_pairs_threadgroup_fence(device const float* x [[buffer(0)]],
                                         device float* y [[buffer(1)]],
                                         uint tid [[thread_index_in_threadgroup]],
                                         uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[64];
  tile[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[tid ^ 1];
}
