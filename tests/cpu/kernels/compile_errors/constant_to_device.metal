// Must not compile: a constant pointer assigned to a device pointer.
#include <metal_stdlib>
using namespace metal;

kernel void copy_coefficients(constant float* c [[buffer(0)]],
                              device float* out [[buffer(1)]],
                              uint gid [[thread_position_in_grid]]) {
  device const float* p = c;  // MARK: error
  out[gid] = p[gid];
}
