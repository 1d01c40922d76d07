// Program-scope `constant` bfloat objects copy into thread memory (Metal allows it;
// C++ for OpenCL needs the stand-in's constant-space constructor).
#include <metal_stdlib>
using namespace metal;
constant bfloat kMin = bfloat(-3.0f);
struct L { static constexpr constant bfloat lo = bfloat(-2.0f); };
kernel void k(device bfloat* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  bfloat a = kMin;
  bfloat b = L::lo;
  bfloat c; c = kMin;
  out[i] = i == 0 ? a : (i == 1 ? b : c);
}
