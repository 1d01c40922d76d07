// A bfloat lvalue in device memory and a bfloat prvalue as the two arms of
// ?: (valid MSL, common in MLX loaders: `src_ok ? src[i] : T(0)`).
#include <metal_stdlib>
using namespace metal;

kernel void pad_bfloat(device const bfloat* src [[buffer(0)]],
                       device bfloat* dst [[buffer(1)]],
                       constant uint& n [[buffer(2)]],
                       uint gid [[thread_position_in_grid]]) {
  dst[gid] = gid < n ? src[gid] : bfloat(0);
}
