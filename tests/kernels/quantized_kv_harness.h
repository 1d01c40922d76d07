// Quantized k and v in the kernel tests (spec kv_dtype q8_0, q4_0, fp8_e4m3;
// DESIGN.md section 13): normal values quantized by the reference's
// quantizers, the stored rows placed in the kernel's buffer at its strides
// (in storage units), and the float64 values the reference dequantizes from
// those same rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention_problem.h"
#include "dtype_rounding.h"
#include "forward_harness.h"
#include "mfagen/forward_dispatch.h"
#include "quantized_kv.h"

namespace mfagen::test {

bool case_quantized(const ForwardCase& c);
KvFormat case_kv_format(const ForwardCase& c);
reference::KvQuant case_kv_quant(const ForwardCase& c);

// The per-tensor scales of an fp8 case (distinct for k and v, so that a
// kernel that swaps them fails); 1 for the other formats.
double case_k_scale(const ForwardCase& c);
double case_v_scale(const ForwardCase& c);

// `rows` rows of `columns` values, normal with standard deviation c.kv_scale,
// quantized into the case's format.
struct QuantizedRows {
  std::vector<uint8_t> stored;  // rows x quantized_row_bytes
  std::vector<double> values;   // rows x columns, dequantized exactly as the format says
};
QuantizedRows quantized_rows(const ForwardCase& c, uint64_t rows, uint32_t columns, uint64_t seed, double scale);

// A device buffer of `bytes` holding stored rows ordered (b, h, s) at strides
// `st` counted in storage units of the case's format.
std::vector<std::byte> quantized_device_tensor(const ForwardCase& c, const std::vector<uint8_t>& stored, uint64_t b,
                                               uint64_t h, uint64_t s, uint32_t columns, const Strides3& st,
                                               uint64_t bytes);

// The problem with k and v rounded to `type`: what a naive implementation
// that dequantizes into the input dtype computes with (the tolerance rule's
// yardstick); q, v and k of unquantized cases are already in `type`.
reference::AttentionProblem with_kv_in(const reference::AttentionProblem& p, reference::ElementType type);

}  // namespace mfagen::test
