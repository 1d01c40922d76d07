// Does not compile: clang must report line 6.
#include <metal_stdlib>
using namespace metal;

kernel void broken(device float* y [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  y[gid] = 1.0f +;
}
