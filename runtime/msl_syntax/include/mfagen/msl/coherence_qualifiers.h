// Metal 3.2's memory coherence qualifier on device pointers and references,
// `volatile coherent(system) device uint* p` (MLX's fence.metal): it makes
// the memory coherent at that scope (the device, or the system with the CPU
// and other GPUs). C++ for OpenCL has no such qualifier. Both lowerings drop
// it: the checker because the qualifier changes no type rule it checks, the
// cpu backend because its buffers are host memory, coherent for every thread
// of every threadgroup already (a fence there is a C++ fence).
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// Removes `coherent(device)` and `coherent(system)` where they qualify a
// declarator's type (followed by a type word, a qualifier or an address
// space), never a call of a function named coherent.
void drop_coherence_qualifiers(TokenView& v);

}  // namespace mfagen::msl
