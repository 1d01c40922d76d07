// The serving layouts of DESIGN.md section 13 in the kernel tests: packed
// sequences (varlen) and paged KV caches. Each runs the generated kernel on
// the cpu backend with every detector on and judges every sequence on its own
// against the float64 reference of that sequence as a dense problem, with the
// tolerance rule of DESIGN.md section 3.
#pragma once

#include "forward_harness.h"

namespace mfagen::test {

// c.varlen_q and c.varlen_k give the lengths (the same count, the batch).
ForwardOutcome run_varlen_case(const ForwardCase& c);

// A forward or decode kernel on a paged KV cache (spec kv_cache paged): the
// pages are built from c.page_size, c.cache_lengths and c.share_pages; every
// batch entry is judged against the float64 reference of its query rows and
// the keys gathered from its pages (reference/paged_cache.h).
ForwardOutcome run_paged_case(const ForwardCase& c);

// Adds the verdict of one sequence to the verdict of the batch: ok when all
// are, the worst errors, and the details of the failing sequences.
void merge(reference::ToleranceVerdict& into, const reference::ToleranceVerdict& v, uint64_t sequence);

}  // namespace mfagen::test
