// Out-of-bounds threadgroup access: tile[tid + 1] in the last thread indexes
// one past the end of a 32-element tile. The twin wraps around.
#include <metal_stdlib>
using namespace metal;

kernel void neighbour_sum(device const float* x [[buffer(0)]],
                          device float* y [[buffer(1)]],
                          uint tid [[thread_index_in_threadgroup]],
                          uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  tile[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[tid] + tile[tid + 1];  // MARK: bug
}

kernel void neighbour_sum_wrapped(device const float* x [[buffer(0)]],
                                  device float* y [[buffer(1)]],
                                  uint tid [[thread_index_in_threadgroup]],
                                  uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  tile[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[tid] + tile[(tid + 1) % 32];
}
