// Function pointers in both lowerings: Metal 2.3 and later support them (MSL
// specification 4, section 1.5.4; section 2.16 passes `float
// (*fnptr[3])(float)` to a function and calls through it), and C++ for
// OpenCL admits them only with clang's __cl_clang_function_pointers
// extension, which the cpu backend's lowering and the checker's prelude both
// enable. The extension admits virtual functions as well, which Metal does
// not have (section 1.5.4): both lowerings report them from the tokens
// instead (virtual_specifiers below).
//
// Functions given as template arguments: non-type template parameters of
// pointer-to-function type (llama.cpp's `template <..., void
// (*dequantize_func)(device const block_q *, short, thread float4x4 &)>`)
// and alias templates of a pointer to function used as such parameters'
// types (MLX's fft.h: `template <typename T> using RadixFunc = void
// (*)(thread vec<T, 2>*, thread vec<T, 2>*);` and `template <typename T,
// bool use_twiddle_table, int radix, RadixFunc<T> radix_func>`, given
// `radix2<T>`). Valid Metal: templates (section 1.5.2) with function
// pointers (section 1.5.4); MLX and llama.cpp ship these kernels, built by
// Apple's compiler. The argument is a function named at compile time
// (C++14 [temp.arg.nontype]/1), so the instantiation calls it directly.
//
// clang-16's C++ for OpenCL finds every argument of a pointer-to-function
// template parameter invalid ("invalid explicitly-specified argument"),
// with the extension enabled or not. A reference-to-function parameter
// takes the same arguments (a function's name, a function template's
// specialization) and is called the same way ([temp.arg.nontype]/1,
// [over.call.func]), so the parameter becomes one:
//   template <void (*op)(...)>                  -> template <void (&op)(...)>
//   template <typename T> using F = R (*)(...); -> ... using F = R (&)(...);
// the alias only when every use of F outside its declaration begins a
// template parameter (so no variable or function parameter changes type).
// An argument written `&f` does not bind to the reference: a compile error
// in both lowerings, not a different result (MLX and llama.cpp name the
// function).
#pragma once

#include <vector>

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// Rewrites every such template parameter and alias outside the stand-in's
// own headers (mfagen_standin/, named by the cpu backend's line markers).
void lower_function_pointer_template_parameters(TokenView& v);

// The `virtual` specifiers outside the stand-in's headers and attributes,
// in order: each declares a virtual function (or a virtual base class),
// which Metal does not have.
std::vector<size_t> virtual_specifiers(const TokenView& v);

// The message both lowerings give for a `virtual` specifier.
inline constexpr const char* kVirtualFunctionMessage =
    "virtual functions are not allowed in Metal (MSL specification section 1.5.4)";

}  // namespace mfagen::msl
