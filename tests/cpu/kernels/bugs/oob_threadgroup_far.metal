// Out-of-bounds threadgroup access far enough past the end of `a` to land
// inside the next threadgroup array `b`. The twin stays inside `a`.
#include <metal_stdlib>
using namespace metal;

kernel void skip_ahead(device float* y [[buffer(0)]],
                       uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float a[32];
  threadgroup float b[32];
  a[tid] = 1.0f;
  b[tid] = 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[tid] = a[tid + 8];  // MARK: bug
}

kernel void skip_ahead_wrapped(device float* y [[buffer(0)]],
                               uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float a[32];
  threadgroup float b[32];
  a[tid] = 1.0f;
  b[tid] = 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[tid] = a[(tid + 8) % 32] + b[tid];
}
