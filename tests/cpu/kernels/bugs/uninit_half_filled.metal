// Uninitialized threadgroup read: only the first 16 threads fill the tile,
// then all 32 read their own element after the barrier. The twin pads the
// rest with zeros.
#include <metal_stdlib>
using namespace metal;

kernel void padded_copy(device const float* x [[buffer(0)]],
                        device float* y [[buffer(1)]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  if (tid < 16) {
    tile[tid] = x[gid];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[tid];  // MARK: bug
}

kernel void padded_copy_zero_filled(device const float* x [[buffer(0)]],
                                    device float* y [[buffer(1)]],
                                    uint tid [[thread_index_in_threadgroup]],
                                    uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  tile[tid] = tid < 16 ? x[gid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[tid];
}
