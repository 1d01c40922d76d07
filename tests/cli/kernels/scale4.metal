// Vector buffers, a struct argument and a function constant:
// out[i] = float4(in[i]) * p.scale (+ 1 if add_bias) for i < p.n.
#include <metal_stdlib>
using namespace metal;

constant bool add_bias [[function_constant(0)]];

struct Params {
  uint n;
  float scale;
};

kernel void scale4(device const half4* in [[buffer(0)]],
                   device float4* out [[buffer(1)]],
                   constant Params& p [[buffer(2)]],
                   uint gid [[thread_position_in_grid]]) {
  if (gid >= p.n) return;
  float4 v = float4(in[gid]) * p.scale;
  if (add_bias) v += 1.0f;
  out[gid] = v;
}
