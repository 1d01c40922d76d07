// The serving layouts in the selftest (DESIGN.md section 13): a case whose
// kernel takes packed sequences (layout varlen) or a paged cache runs on its
// dense inputs laid out that way, every sequence with the case's Sq queries
// and Sk keys, so that the float64 reference of the dense case judges it.
// Pages hold kPageSize keys and are used in shuffled order, with spare pages
// no sequence reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mfagen/forward_dispatch.h"
#include "selftest/case_inputs.h"
#include "selftest/selftest_case.h"

namespace mfagen::selftest {

inline constexpr uint32_t kSelftestPageSize = 16;

// True when the case's kernel reads packed sequences or a paged cache.
bool serving_layout(const SelftestCase& c);

struct LaidOutInputs {
  ForwardCall call;                    // the dense call with the layout's strides, totals and pages
  std::vector<std::byte> q, k, v;      // as the kernel reads them
  std::vector<int32_t> cu_seqlens_q, cu_seqlens_k, block_table, cache_seqlens;  // empty where not read
};

// The case's inputs and call in its kernel's layout.
LaidOutInputs lay_out(const SelftestCase& c, const CaseInputs& in, ForwardCall dense_call);

// What the kernel wrote in its layout, back in the dense order the reference
// judges: out (B, Hq, Sq, Dv) bytes, lse (B, Hq, Sq).
std::vector<std::byte> dense_out(const SelftestCase& c, const std::vector<std::byte>& out);
std::vector<float> dense_lse(const SelftestCase& c, const std::vector<float>& lse);

}  // namespace mfagen::selftest
