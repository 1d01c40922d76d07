// Text -> syntax tree for score_mod and mask_mod. The grammar reads like the
// formula (lowest precedence first):
//
//   or      := and ('||' and)*
//   and     := compare ('&&' compare)*
//   compare := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/' | '//' | '%') unary)*
//   unary   := ('-' | '!') unary | primary
//   primary := number | 'true' | 'false' | name | name '[' or (',' or)* ']'
//            | name '(' or (',' or)* ')' | '(' or ')'
//
// Numbers with a '.' or an exponent are float32 literals, others int32.
// Names are resolved by the type checker. Errors are ExpressionErrors with
// the column of the offending character.
#pragma once

#include <string_view>

#include "expr/expression.h"

namespace mfagen::expr {

inline constexpr size_t kMaxExpressionLength = 4096;
inline constexpr int kMaxNesting = 64;  // parentheses, calls, indices and unary operators

NodePtr parse_expression(std::string_view text);

}  // namespace mfagen::expr
