// `float4 acc = {0.f};`: Metal zero-fills the elements a brace list leaves
// out (llama.cpp's mul_mv kernels: `float4 sumy = {0.f};`, `float2 sum =
// {0};`), C++ for OpenCL rejects the short list ("too few elements in
// vector initialization"). Declarations of builtin vector types with a
// brace initializer become __mf_vector_braces<T>(...)
// (mfagen_standin/lowering_support.h), which does what Metal does. The type
// may also be `vec<T, N>` / `metal::vec<T, N>` and the initializer a direct
// list, `metal::vec<float, 2> sum{0};` (MLX's steel_attention_nax.h).
//
// Both lowerings run this pass, so that what the checker accepts is what the
// cpu backend runs.
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

void lower_short_vector_braces(TokenView& v);

}  // namespace mfagen::msl
