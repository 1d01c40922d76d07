// Copies n floats from buffer 0 to buffer 1 (traffic counters, launch errors).
#include <metal_stdlib>
using namespace metal;

kernel void copy(device const float* src [[buffer(0)]],
                 device float* dst [[buffer(1)]],
                 constant uint& n [[buffer(2)]],
                 uint gid [[thread_position_in_grid]]) {
  if (gid < n) {
    dst[gid] = src[gid];
  }
}

// Four floats per thread (n a multiple of 4).
kernel void copy4(device const float4* src [[buffer(0)]],
                  device float4* dst [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
  dst[gid] = src[gid];
}

// Through threadgroup memory: threadgroup traffic is not device traffic.
kernel void copy_staged(device const float* src [[buffer(0)]],
                        device float* dst [[buffer(1)]],
                        constant uint& n [[buffer(2)]],
                        uint gid [[thread_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint threads [[threads_per_threadgroup]]) {
  threadgroup float tile[256];
  tile[tid] = gid < n ? src[gid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint mirrored = threads - 1 - tid;
  const uint out = gid - tid + mirrored;
  if (out < n) {
    dst[out] = tile[mirrored];
  }
}

// Uses a [[threadgroup(0)]] buffer (launch errors: missing size).
kernel void scratch_user(device float* dst [[buffer(0)]],
                         threadgroup float* scratch [[threadgroup(0)]],
                         uint tid [[thread_index_in_threadgroup]]) {
  scratch[tid] = float(tid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  dst[tid] = scratch[tid];
}
