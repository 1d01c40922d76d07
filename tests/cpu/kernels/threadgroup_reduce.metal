// Per-threadgroup sums of n floats: partial[g] = sum of in[g*T .. g*T+T-1]
// (T = threads per threadgroup, a power of two), the last threadgroup only
// partly covered by the input.
#include <metal_stdlib>
using namespace metal;

// Tree reduction in a kernel-scope threadgroup array.
kernel void reduce_tree(device const float* in [[buffer(0)]],
                        device float* partial [[buffer(1)]],
                        constant uint& n [[buffer(2)]],
                        uint gid [[thread_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint group [[threadgroup_position_in_grid]],
                        uint threads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];
  scratch[tid] = gid < n ? in[gid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = threads / 2; stride > 0; stride /= 2) {
    if (tid < stride) {
      scratch[tid] += scratch[tid + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) {
    partial[group] = scratch[0];
  }
}

// The same with the scratch space passed as a [[threadgroup(0)]] buffer
// (sized by the launch) and a max alongside the sum.
kernel void reduce_sum_max(device const float* in [[buffer(0)]],
                           device float2* partial [[buffer(1)]],
                           constant uint& n [[buffer(2)]],
                           threadgroup float2* scratch [[threadgroup(0)]],
                           uint3 gid3 [[thread_position_in_grid]],
                           uint3 tid3 [[thread_position_in_threadgroup]],
                           uint3 group3 [[threadgroup_position_in_grid]],
                           uint3 threads3 [[threads_per_threadgroup]]) {
  const uint gid = gid3.x, tid = tid3.x;
  const float x = gid < n ? in[gid] : 0.0f;
  scratch[tid] = float2(x, gid < n ? x : -INFINITY);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = threads3.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) {
      const float2 mine = scratch[tid];
      const float2 other = scratch[tid + stride];
      scratch[tid] = float2(mine.x + other.x, max(mine.y, other.y));
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) {
    partial[group3.x] = scratch[0];
  }
}

// Two levels, as MLX reductions do: simd_sum within each simdgroup, one
// value per simdgroup through threadgroup memory, simd_sum again in the
// first simdgroup. Works for any threads per threadgroup up to 1024.
kernel void reduce_simd(device const float* in [[buffer(0)]],
                        device float* partial [[buffer(1)]],
                        constant uint& n [[buffer(2)]],
                        uint gid [[thread_position_in_grid]],
                        uint group [[threadgroup_position_in_grid]],
                        uint lane [[thread_index_in_simdgroup]],
                        uint simd [[simdgroup_index_in_threadgroup]],
                        uint simds [[simdgroups_per_threadgroup]]) {
  threadgroup float per_simd[32];
  float x = gid < n ? in[gid] : 0.0f;
  x = simd_sum(x);
  if (lane == 0) {
    per_simd[simd] = x;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd == 0) {
    float y = lane < simds ? per_simd[lane] : 0.0f;
    y = simd_sum(y);
    if (lane == 0) {
      partial[group] = y;
    }
  }
}
