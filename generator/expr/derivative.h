// Symbolic derivatives of a checked score_mod (DESIGN.md section 13): with
// respect to score (what the backward multiplies dS by) and with respect to
// one read of a float captured tensor (what that element's gradient
// accumulates). Built from the expression's own nodes, with the zeros and
// ones folded away so that `score + bias[i]` differentiates to 1.0.
//
// Ties of non-smooth functions take the first branch: d min(a, b) is da where
// a <= b, d max(a, b) is da where a >= b, d abs(x) is dx where x >= 0, and
// clamp(x, lo, hi) follows x where lo <= x <= hi.
#pragma once

#include "expr/expression.h"

namespace mfagen::expr {

// d root / d score, a real expression (a literal 0.0 when root does not depend on score).
NodePtr derivative_by_score(const NodePtr& root);

// d root / d (the element `read` reads), where `read` is a node of root (by
// identity) reading a float captured tensor.
NodePtr derivative_by_read(const NodePtr& root, const Node* read);

// The reads of float captured tensors in root, each node once, in the order
// the expression reads them (left to right).
std::vector<const Node*> float_reads(const NodePtr& root);

}  // namespace mfagen::expr
