// y = a * x + y, one element per thread; and a second kernel so that "no such
// entry point" errors have more than one kernel to list.
#include <metal_stdlib>
using namespace metal;

kernel void saxpy(device const float* x [[buffer(0)]],
                  device float* y [[buffer(1)]],
                  constant float& a [[buffer(2)]],
                  uint gid [[thread_position_in_grid]]) {
  y[gid] = a * x[gid] + y[gid];
}

kernel void fill(device float* y [[buffer(0)]],
                 constant float& value [[buffer(1)]],
                 uint gid [[thread_position_in_grid]]) {
  y[gid] = value;
}
