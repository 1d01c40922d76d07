// bfloat and half have unordered conversion ranks in MSL, so `?:` between
// them is an error; the conditional repair must not paper over it.
#include <metal_stdlib>
using namespace metal;

kernel void mixed(device const bfloat* src [[buffer(0)]],
                  device float* dst [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
  dst[gid] = float(gid < 4 ? src[gid] : half(0));  // MARK: error
}
