// Metal stand-in: helpers that only the cpu backend inserts into lowered
// code, where C++ for OpenCL's address-space rules differ from Metal's:
//   __mf_rvalue(x)              a prvalue copy of an lvalue in any address
//                               space (runtime/backends/cpu/diagnostic_repair.h);
//   __mf_unprivate_t<T>         T without a top-level __private (wraps decltype);
//   __mf_reinterpret_ref<R&>(x) reinterpret_cast<R&>(x) for thread references;
//   __mf_vector_braces<V>(a...) `V v = {a...};` with fewer elements than V.
#pragma once
#include "unqual.h"

// ---- __mf_rvalue --------------------------------------------------------------
// `c ? src[i] : bfloat(0)`: Metal accepts class-type arms in different address
// spaces; the repair wraps the rejected arms.
template <class T>
inline __attribute__((always_inline)) __mf_unqual<T> __mf_rvalue(T& x) {
  return x;
}
template <class T>
inline __attribute__((always_inline)) __mf_unqual<T> __mf_rvalue(const T& x) {
  return x;
}
// Implicit copy constructors take generic references, which cannot bind to
// constant memory; copy its bytes instead (the arms are trivially copyable).
template <class T>
inline __attribute__((always_inline)) T __mf_rvalue(__constant T& x) {
  return __builtin_bit_cast(T, x);
}
template <class T>
inline __attribute__((always_inline)) T __mf_rvalue(const __constant T& x) {
  return __builtin_bit_cast(T, x);
}

// ---- __mf_unprivate_t -----------------------------------------------------------
// C++ for OpenCL types locals and parameters as `__private T` where Metal has
// plain `T` (`thread` is the default); the lowering wraps every decltype(...)
// so that this does not leak into template arguments such as
// integral_constant<decltype(x), x>.
template <class T>
struct __mf_unprivate {
  typedef T type;
};
template <class T>
struct __mf_unprivate<__private T> {
  typedef T type;
};
template <class T>
using __mf_unprivate_t = typename __mf_unprivate<T>::type;

// ---- __mf_reinterpret_ref -------------------------------------------------------
// `thread` lowers to the generic address space, so reinterpret_cast<thread T&>
// of a local would change the reference's address space, which clang-16
// miscompiles (it crashes in code generation). Going through a generic
// pointer is what the cast means anyway.
template <class R>
struct __mf_referent {
  typedef R type;
};
template <class R>
struct __mf_referent<R&> {
  typedef R type;
};
template <class R, class S>
inline __attribute__((always_inline)) R __mf_reinterpret_ref(S& source) {
  return *(typename __mf_referent<R>::type*)(__generic void*)(&source);
}

// ---- __mf_vector_braces -----------------------------------------------------------
// `float4 acc = {0.f};` (llama.cpp): the leading elements from the list, the
// rest zero, as Metal does; C++ for OpenCL wants every element.
// Vectors among the elements (`float4 v{xy, zw}`): the list as C++ for
// OpenCL reads it.
template <class V, class... A>
inline __attribute__((always_inline)) V __mf_vector_braces(A... values) {
  if constexpr (!(__is_scalar(A) && ...)) {
    return V{values...};
  } else {
    static_assert(sizeof...(A) <= sizeof(V) / sizeof(V{}[0]), "too many elements in vector initialization");
    V v;
    for (int i = 0; i < int(sizeof(V) / sizeof(v[0])); ++i) v[i] = 0;
    int i = 0;
    ((v[i++] = values), ...);
    return v;
  }
}
