// Resolves the names of a parsed expression, sets every node's type, makes
// int-to-float promotions explicit (a to_float call), and proves each read
// of a captured tensor inside its declared extents for every call (interval
// bounds over the sizes, linear_form.h). Errors are ExpressionErrors with the
// column of the offending node.
#pragma once

#include "expr/environment.h"
#include "expr/expression.h"

namespace mfagen::expr {

// Checks `root` in place; `want` is the result type (real for score_mod,
// where an integer result is promoted; boolean for mask_mod). Returns the
// checked root (a promotion may wrap it).
NodePtr type_check(NodePtr root, const Environment& env, Type want);

// The bounds of an integer expression already checked (for tests and messages).
Interval integer_bounds(const Node& node);

}  // namespace mfagen::expr
