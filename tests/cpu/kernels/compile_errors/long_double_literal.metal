// Must not compile: a floating literal with an L suffix is a long double,
// which Metal does not have (MSL specification section 2.1). An unsuffixed
// literal is valid Metal (a float; peer_constructs.metal).
#include <metal_stdlib>
using namespace metal;

kernel void scale(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = out[i] * 0.5L;  // MARK: error
}
