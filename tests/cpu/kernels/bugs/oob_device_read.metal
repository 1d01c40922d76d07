// Out-of-bounds device read: x[gid + 1] in the last thread reads one float
// past the end of x. The twin checks the index first.
#include <metal_stdlib>
using namespace metal;

kernel void shift_left(device const float* x [[buffer(0)]],
                       device float* y [[buffer(1)]],
                       uint gid [[thread_position_in_grid]]) {
  y[gid] = x[gid + 1];  // MARK: bug
}

kernel void shift_left_checked(device const float* x [[buffer(0)]],
                               device float* y [[buffer(1)]],
                               constant uint& n [[buffer(2)]],
                               uint gid [[thread_position_in_grid]]) {
  y[gid] = gid + 1 < n ? x[gid + 1] : 0.0f;
}
