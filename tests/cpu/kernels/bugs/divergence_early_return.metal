// Barrier divergence: threads 16 and up return before a barrier the others
// wait at. The twin keeps every thread and guards the work instead.
#include <metal_stdlib>
using namespace metal;

kernel void reverse_first_half(device const float* x [[buffer(0)]],
                               device float* y [[buffer(1)]],
                               uint tid [[thread_index_in_threadgroup]],
                               uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[16];
  if (tid >= 16) {
    return;
  }
  tile[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);  // MARK: bug
  y[gid] = tile[15 - tid];
}

kernel void reverse_first_half_uniform(device const float* x [[buffer(0)]],
                                       device float* y [[buffer(1)]],
                                       uint tid [[thread_index_in_threadgroup]],
                                       uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[16];
  if (tid < 16) {
    tile[tid] = x[gid];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid < 16) {
    y[gid] = tile[15 - tid];
  }
}
