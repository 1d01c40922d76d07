// Threadgroup data race: every thread writes tile[tid] and then reads its
// neighbour's tile[tid ^ 1] with no barrier in between. The twin has the
// barrier.
#include <metal_stdlib>
using namespace metal;

kernel void swap_pairs(device const float* x [[buffer(0)]],
                       device float* y [[buffer(1)]],
                       uint tid [[thread_index_in_threadgroup]],
                       uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[64];
  tile[tid] = 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  tile[tid] = x[gid];  // MARK: write
  y[gid] = tile[tid ^ 1];  // MARK: read
}

kernel void swap_pairs_synchronized(device const float* x [[buffer(0)]],
                                    device float* y [[buffer(1)]],
                                    uint tid [[thread_index_in_threadgroup]],
                                    uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[64];
  tile[tid] = 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  tile[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[tid ^ 1];
}
