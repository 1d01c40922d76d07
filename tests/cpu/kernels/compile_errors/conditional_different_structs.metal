// `?:` between two different structs is an error in Metal too; the
// conditional repair (same type, other address space) must leave it alone.
#include <metal_stdlib>
using namespace metal;

struct Meters {
  float value;
};
struct Feet {
  float value;
};

kernel void mixed_units(device const Meters* src [[buffer(0)]],
                        device float* dst [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
  dst[gid] = (gid < 4 ? src[gid] : Feet{1.0f}).value;  // MARK: error
}
