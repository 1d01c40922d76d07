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

}  // namespace mfagen::reference
