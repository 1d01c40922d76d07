// A constexpr variable in Metal's constant address space of a class or
// template-parameter type, neither an array nor a pointer or reference:
// `static constexpr constant U init = Limits<U>::max;` (MLX's
// reduction/ops.h, scan.h, sort.h, with U its complex64_t). Metal copies a
// class object out of the constant space with the class's implicit copy
// constructor, as from any other space (MLX ships these files). C++ for
// OpenCL declares implicit copy constructors and assignments for the
// generic address space, which does not include __constant (OpenCL C 3.0,
// section 6.7.9), so the same copy is an error in both lowerings
// ("constexpr variable 'init' must be initialized by a constant
// expression", "no viable overloaded '='").
//
// Such a variable is a compile-time value: Metal gives it no storage the
// program can observe unless its address is taken, and taking the address
// of such an object to pass as a `constant T*` or `constant T&` is what
// this lowering gives up. Arrays and builtin scalars and vectors stay in
// __constant, where they copy out and where peers take their addresses:
// llama.cpp passes `constexpr constant static float kvalues_iq4nl_f[16]` to
// `constant float*` parameters, MLX's sort.h `constant constexpr const int
// zero_helper` to `const constant int&` ones. Both lowerings therefore
// declare the others in the default space, const as constexpr makes them (a
// program-scope or static member variable is then __global, a local one
// __private), where the implicit copies bind:
//   [template <...>] SPECIFIERS* TYPE NAME (= | {) ...
// with `constexpr` and `constant` among the specifiers (static, inline,
// constexpr, const, constant, volatile), TYPE not a builtin scalar or vector
// name, and no `[`, `(`, `*` or `&` between them and the initializer. Every
// other `constant` stays as it is.
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// Removes each such `constant` (the token is marked rewritten, so that the
// lowerings' address-space mapping leaves it). Outside the stand-in.
void lower_constexpr_constants(TokenView& v);

}  // namespace mfagen::msl
