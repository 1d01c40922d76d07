// The backward pass of DESIGN.md section 3, written plainly from its
// definitions, independent of any kernel code: gradients of
// L = sum(out * dO) with respect to q, k and v.
#pragma once

#include <vector>

#include "attention_problem.h"
#include "dtype_rounding.h"

namespace mfagen::reference {

struct AttentionGradients {
  std::vector<double> dq;  // (B, Hq, Sq, D)
  std::vector<double> dk;  // (B, Hkv, Sk, D)
  std::vector<double> dv;  // (B, Hkv, Sk, Dv)
  std::vector<double> d_sinks;  // (Hq,) when the problem has sinks, else empty
};

// In float64: D_i = sum_d dO[i,d] out[i,d]; P = exp(s - lse); dV = P^T dO;
// dP = dO V^T; dS = P * (dP - D); through softcap dZ = dS * (1 - tanh^2(z /
// cap)); dQ = scale * dZ K; dK = scale * dZ^T Q; GQA sums dK and dV over the
// query heads of a group. Rows with no visible key contribute nothing (their
// dQ is 0). Masks and ALiBi are constants: no gradient flows into them.
// Sinks: P and lse include the sink column, which has no value (its dP is 0),
// so dS of the keys is unchanged and d_sinks[h] = -sum_{b,i} exp(sink_h -
// lse) * D_i (DESIGN.md section 13).
AttentionGradients reference_attention_backward(const AttentionProblem& p, const std::vector<double>& d_out);

// The same math with every operation rounded to `type` (float32: float
// arithmetic): the yardstick of the gradient tolerance rule. The forward
// quantities (out, lse) come from naive_attention_in_dtype.
AttentionGradients naive_attention_backward_in_dtype(const AttentionProblem& p, const std::vector<double>& d_out,
                                                     ElementType type);

// d sum(dO . out) / d table[e] for every element of a float32 table that the
// problem's score_mod reads (a captured tensor, DESIGN.md section 13), by
// central differences of reference_attention with steps of 1/1024 (exact in
// float32, so the perturbed values are exactly table[e] +- step). The table
// is changed in place and restored.
std::vector<double> table_gradient_by_central_differences(const AttentionProblem& p, const std::vector<double>& d_out,
                                                          std::vector<float>& table);

}  // namespace mfagen::reference
