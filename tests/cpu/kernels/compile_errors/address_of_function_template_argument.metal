// Must not compile here, though it is valid C++: `&twice` for a template
// parameter of pointer-to-function type. Both lowerings make the parameter
// a reference to function (mfagen/msl/function_pointers.h), to which `&twice`
// does not bind: an error in both (CheckRules.AddressOfFunctionAsTemplateArgument),
// never a different result. MLX and llama.cpp write the function's name.
#include <metal_stdlib>
using namespace metal;

float twice(float x) { return 2.0f * x; }
template <float (*op)(float)>
float apply(float x) { return op(x); }

kernel void scale(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = apply<&twice>(out[i]);  // MARK: error
}
