// C++ for OpenCL types a local or parameter `int x` as `__private int`, so
// decltype(x) would carry an address space Metal's `thread int` does not
// show (MLX: integral_constant<decltype(res), res> with a static constant
// member). __mf_unprivate_t drops a top-level __private and nothing else.
// Both lowerings run it (the checker's since MLX's NAX GEMMs add such
// constants); unbalanced brackets are left as written.
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// decltype(x) -> __mf_unprivate_t<decltype(x)> (mfagen_standin/lowering_support.h).
void lower_decltype(TokenView& v);

}  // namespace mfagen::msl
