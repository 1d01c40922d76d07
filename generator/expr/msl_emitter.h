// A checked expression -> MSL source text. Variables print as the parameters
// of the generated functions (score, b, h, q_idx, kv_idx), sizes, scalars and
// captured tensors as members of the ModInputs value `m`; a captured tensor's
// indices are flattened row-major with its extents. Parentheses appear only
// where precedence needs them, so the kernel reads like the spec.
#pragma once

#include <string>

#include "expr/environment.h"
#include "expr/expression.h"

namespace mfagen::expr {

std::string to_msl(const Node& n, const Environment& env);

// The row-major flat index a read of a captured tensor reads, over `m`'s sizes.
std::string msl_flat_index(const Node& read, const Environment& env);

// A float32 literal in MSL: "0.5f", "1e-05f", "3.0f".
std::string msl_float(double v);

// A linear form of the sizes as an MSL int expression over `m`: "m.Sq + m.Sk - 1", "255".
std::string msl_extent(const LinearForm& f);

}  // namespace mfagen::expr
