// k and v of a kernel test case (DESIGN.md section 13 for the quantized
// formats): values in the case's dtype, or normal values quantized by the
// reference's quantizers into the spec's kv_dtype (q8_0, q4_0, fp8_e4m3). The
// kernel reads the stored rows, placed in its buffer at its strides (in
// storage units); the reference takes the float64 values those rows hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention_problem.h"
#include "dtype_rounding.h"
#include "forward_harness.h"
#include "mfagen/forward_dispatch.h"

namespace mfagen::test {

KvFormat case_kv_format(const ForwardCase& c);

// The per-tensor scales of an fp8 case (distinct for k and v, so that a
// kernel that swaps them fails); 1 for the other formats.
double case_k_scale(const ForwardCase& c);
double case_v_scale(const ForwardCase& c);

// `rows` rows of `columns` values of k (or v, with its scale), standard
// deviation c.kv_scale, from `seed`.
struct CaseKv {
  std::vector<double> values;   // rows x columns, as the reference sees them
  std::vector<uint8_t> stored;  // quantized cases: rows x stored row bytes; else empty
};
CaseKv case_kv(const ForwardCase& c, uint64_t rows, uint32_t columns, uint64_t seed, double scale);

// The kernel's buffer of `bytes` holding the rows ordered (b, h, s) at strides
// `st` (storage units of the case's format): stored rows or dtype values.
std::vector<std::byte> case_kv_buffer(const ForwardCase& c, const CaseKv& kv, uint64_t b, uint64_t h, uint64_t s,
                                      uint32_t columns, const Strides3& st, uint64_t bytes);

// The problem with k and v rounded to `type`: what a naive implementation
// that dequantizes into the input dtype computes with (the tolerance rule's
// yardstick); q, v and k of unquantized cases are already in `type`.
reference::AttentionProblem with_kv_in(const reference::AttentionProblem& p, reference::ElementType type);

}  // namespace mfagen::test
