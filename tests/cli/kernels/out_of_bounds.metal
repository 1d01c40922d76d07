// The last thread writes one element past the end of y: the out-of-bounds
// detector must report line 9.
#include <metal_stdlib>
using namespace metal;

kernel void shift_right(device const float* x [[buffer(0)]],
                        device float* y [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
  y[gid + 1] = x[gid];
}
