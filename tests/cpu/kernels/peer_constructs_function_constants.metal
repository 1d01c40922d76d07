// MLX's fft.h (issue 35), in its style, written for mfagen's tests: function
// constants declared with more specifiers than `constant`
// (`STEEL_CONST bool inv_ [[function_constant(0)]];` with STEEL_CONST
// `static constant constexpr const`, steel/defines.h).
// out[0] = (inv ? -1 : 1) * steps * x[0].
#include <metal_stdlib>
using namespace metal;

#define PEER_CONST static constant constexpr const

PEER_CONST bool inv_ [[function_constant(0)]];
PEER_CONST int steps_ [[function_constant(2)]];
constexpr constant static int unused_ [[function_constant(3)]];

kernel void specialized(device const float* x [[buffer(0)]], device float* out [[buffer(1)]]) {
  out[0] = (inv_ ? -1.0f : 1.0f) * float(steps_) * x[0] + float(unused_);
}
