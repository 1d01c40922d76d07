// Metal stand-in: helpers that only the cpu backend inserts into lowered
// code, where C++ for OpenCL's address-space rules differ from Metal's:
//   __mf_rvalue(x)              a prvalue copy of an lvalue in any address
//                               space (runtime/backends/cpu/diagnostic_repair.h);
//   __mf_unprivate_t<T>         T without a top-level __private (wraps decltype);
//   __mf_reinterpret_ref<R&>(x) reinterpret_cast<R&>(x) for thread references;
//   __mf_vector_braces<V>(a...) `V v = {a...};` with fewer elements than V;
//   __mf_braced_vector{a...}    a braced list passed for a vector parameter
//                               (runtime/backends/cpu/diagnostic_repair.h).
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

// ---- __mf_braced_vector -----------------------------------------------------------
// `elem_to_loc_2_nd<IdxT>({N * index.x, index.y, index.z}, ...)` with a uint3
// parameter (MLX's copy, binary and ternary kernels): Metal copy-list-
// initializes the vector parameter from the list ([dcl.init.list], which MSL
// follows; Apple's compiler accepts it, MLX ships it), while clang-16 leaves
// list-initialization of a vector out of overload resolution ("cannot convert
// initializer list argument"). The repair puts this name before the braces of
// exactly the lists clang rejected for a vector parameter: the elements are
// evaluated where they were, in order, and the object converts to the
// parameter's vector as `V v = {a...};` would (__mf_vector_braces).
template <class... A>
struct __mf_value_list;
template <>
struct __mf_value_list<> {
  template <class V, class... P>
  inline __attribute__((always_inline)) constexpr V build(P... p) const {
    return __mf_vector_braces<V>(p...);
  }
};
template <class H, class... T>
struct __mf_value_list<H, T...> {
  H head;
  __mf_value_list<T...> tail;
  constexpr __mf_value_list(H h, T... t) : head(h), tail(t...) {}
  template <class V, class... P>
  inline __attribute__((always_inline)) constexpr V build(P... p) const {
    return tail.template build<V>(p..., head);
  }
};
template <class... A>
struct __mf_braced_vector {
  __mf_value_list<A...> values;
  constexpr __mf_braced_vector(A... a) : values(a...) {}
  template <class V>
  inline __attribute__((always_inline)) constexpr operator V() const {
    return values.template build<V>();
  }
};
template <class... A>
__mf_braced_vector(A...) -> __mf_braced_vector<A...>;
