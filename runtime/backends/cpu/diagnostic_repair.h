// Repairs the places where C++ for OpenCL rejects valid MSL for reasons that
// only its type checker can see, driven by clang's own diagnostics so that
// exactly the rejected expressions change and nothing else:
//
//  - a conditional whose arms are one class type in different address
//    spaces, e.g. `i < n ? src[i] : bfloat(0)` with `src` a device pointer
//    (MLX's loaders): Metal gives a prvalue, clang rejects it ("incompatible
//    operand types ('const __global bfloat' and 'bfloat')"). Each arm naming
//    an address space is wrapped in __mf_rvalue(...) (a prvalue copy,
//    mfagen_standin/lowering_support.h), inside the arm, so evaluation order
//    and short-circuiting are unchanged; likewise when clang finds the
//    conditional ambiguous ("can be converted to several common types") for
//    a class that converts to many types (MLX's complex64_t);
//  - a scalar of higher rank than a vector's elements, e.g. `float * half4`
//    (llama.cpp): Metal converts the scalar to the element type ("the scalar
//    may also be subject to the usual arithmetic conversion to the element
//    type", MSL section 2.13), clang rejects it. The scalar operand is
//    wrapped in static_cast<__mf_scalar_operand_t<decltype(VECTOR),
//    decltype(SCALAR)>>(...), the vector's element type spelled so that it
//    is right in every instantiation of a template (MLX's radix3<T>, `0.5 *
//    a_1` with a vec<T, 2> a_1, for float and half; the vector operand
//    appears only in decltype, unevaluated). `mfagen check` makes the same
//    repairs (generator/check/check.cpp, collect_operand_repairs);
//  - a braced list passed for a vector parameter, e.g. `f({n * i.x, i.y,
//    i.z})` with a uint3 parameter (MLX's copy and binary kernels): Metal
//    list-initializes the parameter, clang-16 finds no candidate ("cannot
//    convert initializer list argument to 'uint3'"). The list named in that
//    note becomes `__mf_braced_vector{...}`, an object that converts to the
//    parameter's vector (mfagen_standin/lowering_support.h);
//  - an assignment from a bfloat to an integer, e.g. `out[i] = tgp_vals[i]`
//    with a uint `out` and a threadgroup bfloat `tgp_vals` (MLX's sort.h):
//    Metal's bfloat is a builtin scalar that converts implicitly, the
//    stand-in's class converts to integers only explicitly ("assigning to
//    'unsigned int' from incompatible type '__local bfloat'"). The source is
//    wrapped in __mf_implicit_scalar(...) (mfagen_standin/scalar_types.h),
//    which converts a bfloat to whatever it is assigned to and passes any
//    other value through, so the template's other instantiations are
//    unchanged.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mfagen::cpu {

// `lowered` failed to compile with `flags` (the build's language flags).
// Returns the text with every error of the kinds above repaired, round after
// round (a repair can expose an enclosing expression; other errors are often
// consequences of a repairable one, so they do not stop it), or nullopt when
// a round finds nothing to repair. The caller uses the text only if it then
// compiles, and reports the original errors otherwise.
std::optional<std::string> repair_from_diagnostics(const std::string& lowered, const std::vector<std::string>& flags,
                                                   const std::string& scratch_file);

}  // namespace mfagen::cpu
