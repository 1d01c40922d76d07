// The fields of a kernel object that describe score_mod and mask_mod
// (DESIGN.md section 13): "captures" and "scalars" (one value each, never a
// list) and the expressions themselves, checked against them with errors that
// name the file, the JSON path and the column in the expression.
#pragma once

#include <string>
#include <vector>

#include "expr/environment.h"
#include "spec/json_values.h"

namespace mfagen::spec::detail {

struct ModDeclarations {
  std::vector<expr::CaptureDecl> captures;
  std::vector<std::string> scalars;
};

// "captures": {"name": {"dtype": "float32" | "int32", "shape": [extent, ...]}}
// and "scalars": ["name", ...], when present.
ModDeclarations read_mod_declarations(const Json& object, const Where& at);

// Parses and checks each value (or list element) of "score_mod" and
// "mask_mod" against the declarations.
void check_mod_expressions(const Json& object, const Where& at, const ModDeclarations& declared);

}  // namespace mfagen::spec::detail
