// An out-of-class definition, without an initializer, of a constexpr static
// data member (MLX's conv.metal, after `struct WinogradTransforms<6, 3, 8>
// { static constant constexpr const float wt_transform[8][8] = {...}; };`:
// `constant constexpr const float WinogradTransforms<6, 3, 8>::wt_transform[8][8];`).
// C++14 ([class.static.data]/3) required such a definition, without an
// initializer, when the member is odr-used; C++17 made the in-class
// declaration a definition ([dcl.constexpr]/1: a constexpr static data
// member is implicitly inline) and kept the out-of-class one as a redundant
// redeclaration ([depr.static_constexpr]). Apple's compiler accepts it
// (MLX ships conv.metal; MSL is C++14-based, specification 3.2 section
// 1.5), and the member keeps its in-class initializer. C++ for OpenCL
// applies OpenCL's program-scope rule to the redeclaration instead
// ("variable in constant address space must be initialized"), in both
// lowerings. The declaration
// adds nothing to the C++17 program both lowerings compile, so both drop it:
//   [template <...>] {constant, const, constexpr, inline, volatile}* (with
//   constexpr) TYPE QUALIFIED::NAME [dims]* ;
// where QUALIFIED::NAME has at least one `::` and there is no initializer.
// A declaration with an initializer, of a function, or without constexpr
// stays as written (and a non-constexpr one in the constant space stays
// clang's error, as OpenCL's rule makes it in both).
#pragma once

#include "mfagen/msl/token_view.h"

namespace mfagen::msl {

// Outside the stand-in's own headers (mfagen_standin/, named by the cpu
// backend's line markers).
void drop_redundant_constexpr_member_definitions(TokenView& v);

}  // namespace mfagen::msl
