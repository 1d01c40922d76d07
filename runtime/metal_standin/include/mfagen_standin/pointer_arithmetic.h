// Metal stand-in: `pointer += x` and `pointer -= x` with x of a class type
// that converts to an integer (MLX's `src += str_y` with `str_y` an
// `Int<1>` integral constant, steel/attn/mma.h).
//
// C++ ([over.built]: for every object type T, `T*VQ& operator+=(T*VQ&,
// std::ptrdiff_t)` and the same for -=) makes these built-in candidates, so
// the class operand converts to ptrdiff_t, and Metal's compiler accepts the
// code (MLX ships it; MSL specification section 1.4: Metal is C++ with the
// restrictions listed there, none of which concerns these operators).
// clang-16 in C++ for OpenCL mode builds the candidate with a reference in
// the default address space, which does not bind to a pointer object in
// __private (or any named) space, so `p += integral_constant` finds no
// viable operator ("invalid operands to binary expression"), while `p + ic`
// and arithmetic `i += ic` work. These templates supply the missing
// candidates with the built-in meaning, p = p + x; the reference deduces the
// pointer object's address space. They are viable only where the built-in
// one is meant to be: a pointer on the left, a class on the right for which
// `p + x` is valid (an ambiguous conversion stays an error, as in C++).
//
// They are found by ordinary lookup from the global namespace, so code in a
// namespace that declares its own non-member operator+= hides them there;
// such code fails to compile (no silent difference).
#pragma once
#include "type_traits.h"

// (The condition is a default template argument: clang cannot mangle a type
// trait in a function's signature.)
template <class __P, class __X, bool = __is_pointer(__P) && __is_class(__X)>
struct __mf_pointer_offset {};
template <class __P, class __X>
struct __mf_pointer_offset<__P, __X, true> {
  typedef void type;
};
template <class __P, class __X, class = typename __mf_pointer_offset<__P, __X>::type>
METAL_FUNC auto operator+=(__P& __p, __X __x) -> decltype(__p = __p + __x) {
  return __p = __p + __x;
}
template <class __P, class __X, class = typename __mf_pointer_offset<__P, __X>::type>
METAL_FUNC auto operator-=(__P& __p, __X __x) -> decltype(__p = __p - __x) {
  return __p = __p - __x;
}
