// Runs a generated varlen kernel (spec layout varlen, DESIGN.md section 13)
// on a packed batch of sequences of the case's lengths, on the cpu backend
// with every detector on, and judges every sequence on its own against the
// float64 reference of that sequence as a dense problem (reference/
// packed_batch.h), with the tolerance rule of DESIGN.md section 3.
#pragma once

#include "forward_harness.h"

namespace mfagen::test {

// c.varlen_q and c.varlen_k give the lengths (the same count, the batch).
ForwardOutcome run_varlen_case(const ForwardCase& c);

}  // namespace mfagen::test
