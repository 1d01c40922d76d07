// Out-of-bounds device write: the grid is rounded up to whole threadgroups
// and the kernel forgets the `gid < n` check, so the threads past n write
// past the end of y. The twin has the check.
#include <metal_stdlib>
using namespace metal;

kernel void fill(device float* y [[buffer(0)]],
                 constant float& value [[buffer(1)]],
                 uint gid [[thread_position_in_grid]]) {
  y[gid] = value;  // MARK: bug
}

kernel void fill_checked(device float* y [[buffer(0)]],
                         constant float& value [[buffer(1)]],
                         constant uint& n [[buffer(2)]],
                         uint gid [[thread_position_in_grid]]) {
  if (gid < n) {
    y[gid] = value;
  }
}
