// The float64 reference of the attention contract (DESIGN.md section 3), and
// the same math done naively in the input dtype (the yardstick of the
// tolerance rule). Plain loops, no dependency on kernel code.
#pragma once

#include <cstdint>

#include "attention_problem.h"
#include "dtype_rounding.h"

namespace mfagen::reference {

// Throws std::invalid_argument saying what is inconsistent: tensor sizes that
// do not match the shape, Hq not a multiple of Hkv, a mask dim that is neither
// 1 nor full, a wrong number of ALiBi slopes, non-finite inputs, an additive
// mask holding NaN or +inf, a window side below -1, a negative softcap, a
// wrong number of sink logits or one that is NaN or +inf.
void validate(const AttentionProblem& problem);

// The scale actually used: problem.scale, or 1/sqrt(head_dim) when it is 0.
double effective_scale(const AttentionProblem& problem);

// off of the contract: 0 for causal top_left, Sk - Sq otherwise (bottom_right,
// and window/ALiBi when causal is none).
int64_t query_offset(const AttentionProblem& problem);

// Whether key j is visible to query i of (batch b, query head h): every active
// rule (causal, window, bool mask, additive mask != -inf) holds.
bool key_visible(const AttentionProblem& problem, uint64_t b, uint64_t h, uint64_t i, uint64_t j);
// d score_mod / d score at `score` by central differences in float64 (1 without a score_mod).
double score_mod_slope(const AttentionProblem& problem, double score, uint64_t b, uint64_t h, uint64_t i, uint64_t j);

// The factor dropout puts on weight (b, h, i, j) of P.V: 1 / (1 - p) if kept,
// 0 if dropped; 1 without dropout.
double dropout_weight(const AttentionProblem& problem, uint64_t b, uint64_t h, uint64_t i, uint64_t j);

// Attention in float64, exactly per the contract.
AttentionResult reference_attention(const AttentionProblem& problem);

// The same math in `type`: every product, sum, exp, tanh, log and division is
// rounded to `type` right after it is computed; sums run sequentially over d
// and j; the softmax subtracts the row max. scale, softcap and the ALiBi
// slopes are rounded to `type` first. The inputs (q, k, v, finite additive mask
// values) must already be representable in `type`; otherwise this throws
// std::invalid_argument (a test that forgot to round would get a loose bound).
AttentionResult naive_attention_in_dtype(const AttentionProblem& problem, ElementType type);

}  // namespace mfagen::reference
