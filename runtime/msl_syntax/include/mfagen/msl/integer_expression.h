// The value of a small integer constant expression in the token stream, for
// what MSL writes as one after the preprocessor has run: llama.cpp's
// `[[function_constant(FC_MUL_MM + 1)]]` becomes `[[function_constant(700 + 1)]]`.
#pragma once

#include <optional>

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// Value of the integer literals, unary minus, + - * and parentheses in
// tokens [begin, end); nullopt for anything else.
std::optional<long> integer_expression(const TokenView& v, size_t begin, size_t end);

}  // namespace mfagen::msl
