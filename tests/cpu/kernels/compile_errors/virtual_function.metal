// Must not compile: Metal has no virtual functions (MSL specification
// section 1.5.4). clang's C++ for OpenCL would reject them, but the
// function pointers extension both lowerings enable (Metal has function
// pointers) admits them; the lowering reports the specifier, as the checker
// does (mfagen/msl/function_pointers.h).
#include <metal_stdlib>
using namespace metal;

struct Op {
  virtual float run(float x) const { return 2.0f * x; }  // MARK: error
};

kernel void apply(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  Op op;
  out[i] = op.run(out[i]);
}
