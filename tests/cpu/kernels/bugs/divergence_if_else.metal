// Barrier divergence: each branch of an if/else has its own barrier, so the
// two halves of the threadgroup wait at different barriers. The twin has one
// barrier after the if/else.
#include <metal_stdlib>
using namespace metal;

kernel void exchange_halves(device const float* x [[buffer(0)]],
                            device float* y [[buffer(1)]],
                            uint tid [[thread_index_in_threadgroup]],
                            uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  if (tid < 16) {
    tile[tid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);  // MARK: then-barrier
    y[gid] = tile[tid + 16];
  } else {
    tile[tid] = 2.0f * x[gid];
    threadgroup_barrier(mem_flags::mem_device);  // MARK: else-barrier
    y[gid] = tile[tid - 16] + 1.0f;
  }
}

kernel void exchange_halves_one_barrier(device const float* x [[buffer(0)]],
                                        device float* y [[buffer(1)]],
                                        uint tid [[thread_index_in_threadgroup]],
                                        uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  if (tid < 16) {
    tile[tid] = x[gid];
  } else {
    tile[tid] = 2.0f * x[gid];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid < 16) {
    y[gid] = tile[tid + 16];
  } else {
    y[gid] = tile[tid - 16] + 1.0f;
  }
}
