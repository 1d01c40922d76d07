// The tolerance rule of DESIGN.md section 3: how a kernel's output and
// log-sum-exp are judged against the float64 reference.
#pragma once

#include <span>
#include <string>

#include "attention_problem.h"
#include "dtype_rounding.h"

namespace mfagen::reference {

struct ToleranceVerdict {
  bool ok = false;
  double max_abs_error = 0;  // over all elements; +inf if the kernel wrote NaN/Inf
  double naive_error = 0;    // max abs error of the naive in-dtype computation (0 for lse)
  double bound = 0;          // output: 2 * naive_error + 1e-5; lse: the allowed error at the worst element
  std::string detail;        // human-readable: worst element (b,h,i,d), kernel and reference values, failed rules
};

// Per-element (atol, rtol) of the contract: (5e-6, 5e-5) for float32,
// (5e-3, 5e-2) for float16 and bfloat16.
struct ElementTolerance {
  double atol, rtol;
};
ElementTolerance element_tolerance(ElementType type);

// The kernel output (B,Hq,Sq,Dv), widened exactly to float, passes iff
//  - it holds no NaN or Inf;
//  - rows without a visible key (reference lse = -inf) are exactly 0;
//  - max |kernel - reference| <= 2 * max |naive - reference| + 1e-5;
//  - every element is within atol + rtol * |reference|.
// A naive result holding NaN/Inf counts as an infinite naive error.
ToleranceVerdict check_output(std::span<const float> kernel_out, const AttentionResult& reference,
                              const AttentionResult& naive, ElementType type, const AttentionProblem& problem);

// The kernel lse (B,Hq,Sq) passes iff every row has |lse - ref| <= 1e-5 * (1 + |ref|),
// rows whose reference is -inf are exactly -inf, and there is no NaN. The
// overload with the problem names rows as (b,h,i) instead of a flat index.
ToleranceVerdict check_lse(std::span<const float> kernel_lse, const AttentionResult& reference);
ToleranceVerdict check_lse(std::span<const float> kernel_lse, const AttentionResult& reference,
                           const AttentionProblem& problem);

}  // namespace mfagen::reference
