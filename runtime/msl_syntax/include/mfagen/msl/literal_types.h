// The type of an unsuffixed floating literal (`0.5`, `1e-3`) in MSL: float.
//
// The Metal Shading Language specification (section 2.1, "Scalar Data
// Types") has no double: its floating types are half, bfloat and float, with
// the suffixes h/H for half and f/F for float (no suffix names a double).
// Apple's compiler is clang, which for OpenCL targets without double
// precision converts an unsuffixed floating literal to float
// (Sema::ActOnNumericConstant: "double precision constant requires
// cl_khr_fp64, casting to single precision"): the literal's double value
// rounded to float. Observed behaviour agrees: ggml's shipped ggml-metal.metal
// writes `0.5*x` with a float4 `x`, `fmin(1, x/6 + 0.5)` and
// `float4 sa_vec(0.0)`, which Apple's compiler accepts and which would be
// ambiguous (fmin(float, double) matches the float and half overloads alike)
// or ill-formed (double * float4) were the literal a double.
//
// C++ makes such a literal a double, and clang's own switch for the OpenCL
// rule (-cl-single-precision-constant) is lost in templates (instantiation
// drops the implicit cast it adds). So both lowerings rewrite the token
// itself: an unsuffixed floating literal gets an `f` suffix when the float
// nearest its decimal value is also its double value rounded to float, and
// otherwise (a decimal within half a double ulp of a float rounding
// boundary) is spelled as that float in hexadecimal; either way it is
// typed float with the value clang's rule gives. Suffixed literals and
// integers are left alone; an `l`/`L` suffix (a long double, which Metal does
// not have) is an error in both.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// A pp-number that is a floating literal (a decimal with `.` or an exponent,
// or a hexadecimal with a `p` exponent), with any suffix.
bool is_floating_literal(std::string_view number);

// A floating literal with an l/L suffix: a long double. `1L` and `0x1fL`
// are integers (long).
bool is_long_double_literal(std::string_view number);

// The spelling of an unsuffixed floating literal as the float Metal makes
// it; nullopt for anything else (suffixed, integer, not a number).
std::optional<std::string> as_float_literal(std::string_view number);

// `#define NAME ...` (a directive token's text): the offset where the rest
// of the directive (parameters, then the replacement list) starts, or npos
// for another directive. A macro's text from there is what lowerings of
// raw MSL (the checker's) rewrite.
size_t define_body(std::string_view directive);

// Rewrites every unsuffixed floating literal of the code, and of the bodies
// of `#define` directives (the checker reads files before preprocessing).
void type_floating_literals_as_float(TokenView& v);

}  // namespace mfagen::msl
