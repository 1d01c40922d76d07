// Uninitialized threadgroup read: a reversal through a tile whose staging
// store was forgotten. The twin stages the input first.
#include <metal_stdlib>
using namespace metal;

kernel void reverse(device const float* x [[buffer(0)]],
                    device float* y [[buffer(1)]],
                    uint tid [[thread_index_in_threadgroup]],
                    uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[31 - tid] + x[gid];  // MARK: bug
}

kernel void reverse_staged(device const float* x [[buffer(0)]],
                           device float* y [[buffer(1)]],
                           uint tid [[thread_index_in_threadgroup]],
                           uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  tile[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[31 - tid] + x[gid];
}
