// Threadgroup data race: threads 2k and 2k+1 both write tile[k] in the same
// barrier interval. The twin lets only the even thread write.
#include <metal_stdlib>
using namespace metal;

kernel void pair_max(device const float* x [[buffer(0)]],
                     device float* y [[buffer(1)]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint gid [[thread_position_in_grid]],
                     uint group [[threadgroup_position_in_grid]]) {
  threadgroup float tile[16];
  tile[tid / 2] = max(x[gid], x[gid ^ 1]);  // MARK: bug
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid < 16) {
    y[group * 16 + tid] = tile[tid];
  }
}

kernel void pair_max_one_writer(device const float* x [[buffer(0)]],
                                device float* y [[buffer(1)]],
                                uint tid [[thread_index_in_threadgroup]],
                                uint gid [[thread_position_in_grid]],
                                uint group [[threadgroup_position_in_grid]]) {
  threadgroup float tile[16];
  if (tid % 2 == 0) {
    tile[tid / 2] = max(x[gid], x[gid ^ 1]);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid < 16) {
    y[group * 16 + tid] = tile[tid];
  }
}
