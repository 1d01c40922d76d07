// Out-of-bounds constant read: a 3-tap filter reads coefficients c[0..3]
// from a constant buffer of 3 floats. The twin uses c[0..2].
#include <metal_stdlib>
using namespace metal;

kernel void filter(device const float* x [[buffer(0)]],
                   constant float* c [[buffer(1)]],
                   device float* y [[buffer(2)]],
                   uint gid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (uint k = 0; k <= 3; ++k) {
    acc += c[k] * x[gid + k];  // MARK: bug
  }
  y[gid] = acc;
}

kernel void filter_checked(device const float* x [[buffer(0)]],
                           constant float* c [[buffer(1)]],
                           device float* y [[buffer(2)]],
                           uint gid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (uint k = 0; k < 3; ++k) {
    acc += c[k] * x[gid + k];
  }
  y[gid] = acc;
}
