#pragma once
// Loop-unrolling pragmas are hints: they change how fast a loop runs, never
// what it computes. On the GPU they matter; on the cpu backend, full
// unrolling of a kernel's tile loops made x86 code generation take about 90%
// of a kernel's compile (6.3 s against 0.45 s for a D 80 forward tile), while
// the rolled loops compute the same bits. Kernels built to run drop them;
// profiling builds keep them, because the profile counts what the GPU would
// execute, unrolled loops included (docs/profile.md).
#include <string>

namespace mfagen::cpu {

// Blanks every line of `text` that is a loop-unrolling pragma (`#pragma
// unroll`, `#pragma nounroll`, `#pragma clang loop ...`, `#pragma GCC
// unroll`), keeping the line so that findings keep their line numbers.
// Returns how many lines were blanked.
int drop_unroll_hints(std::string& text);

}  // namespace mfagen::cpu
