// Must not compile: a missing semicolon.
#include <metal_stdlib>
using namespace metal;

kernel void add_one(device float* x [[buffer(0)]],
                    uint gid [[thread_position_in_grid]]) {
  float y = x[gid] + 1.0f  // MARK: error
  x[gid] = y;
}
