// The inputs of a selftest case, seeded and identical on every platform:
// once as the float64 reference reads them (already rounded to the kernel's
// dtype) and once as kernel buffer bytes.
#pragma once

#include <cstddef>
#include <vector>

#include "attention_problem.h"
#include "dtype_rounding.h"
#include "quantized_kv.h"
#include "selftest/selftest_case.h"
#include "spec/kernel_spec.h"

namespace mfagen::selftest {

struct CaseInputs {
  reference::AttentionProblem problem;  // q, k, v, mask, slopes and call values, BHSD
  std::vector<double> d_out;            // backward cases: dO (B, Hq, Sq, Dv), rounded; else empty
  // Kernel encodings (the dtype's bytes; a bool mask one byte per element;
  // ALiBi slopes and sink logits float32; quantized k and v their stored rows). Empty for what the kernel does not take.
  std::vector<std::byte> q, k, v, mask, alibi_slopes, sinks, d_out_bytes;
};

// q, k, v (and dO) normal(0, 1); masks hide about 30% of the keys and every
// row i with i % 7 == 3 entirely (such rows must give out 0 and lse -inf);
// ALiBi slopes 2^(-8 (h + 1) / Hq), per batch scaled by (b + 1); sink logits
// from -1 to 4 over the heads, the last head without a sink (-inf); quantized
// k and v (kv_dtype) are normal values stored in the format, `problem`
// holding the values the stored rows hold.
CaseInputs make_inputs(const SelftestCase& c);

// The reference's names for a spec dtype and causal mode.
reference::ElementType reference_type(spec::DType type);
// The reference's format for a quantized kv_dtype (std::logic_error for the others).
reference::KvQuant reference_quant(spec::KvDType type);
reference::CausalMode reference_causal(spec::Causal causal);

}  // namespace mfagen::selftest
