// Metal stand-in: __mf_rvalue(x), a prvalue copy of an lvalue in any address
// space. Inserted only by the cpu backend's conditional repair
// (runtime/backends/cpu/conditional_repair.h) around the arms of a `?:` that
// Metal accepts and C++ for OpenCL rejects, e.g. `c ? src[i] : bfloat(0)`.
#pragma once

template <class T>
struct __mf_rvalue_type {
  typedef T type;
};
template <class T>
struct __mf_rvalue_type<const T> {
  typedef typename __mf_rvalue_type<T>::type type;
};
template <class T>
struct __mf_rvalue_type<volatile T> {
  typedef typename __mf_rvalue_type<T>::type type;
};
template <class T>
struct __mf_rvalue_type<__global T> {
  typedef typename __mf_rvalue_type<T>::type type;
};
template <class T>
struct __mf_rvalue_type<__local T> {
  typedef typename __mf_rvalue_type<T>::type type;
};
template <class T>
struct __mf_rvalue_type<__constant T> {
  typedef typename __mf_rvalue_type<T>::type type;
};
template <class T>
struct __mf_rvalue_type<__private T> {
  typedef typename __mf_rvalue_type<T>::type type;
};
template <class T>
struct __mf_rvalue_type<__generic T> {
  typedef typename __mf_rvalue_type<T>::type type;
};

template <class T>
inline __attribute__((always_inline)) typename __mf_rvalue_type<T>::type __mf_rvalue(T& x) {
  return x;
}
template <class T>
inline __attribute__((always_inline)) typename __mf_rvalue_type<T>::type __mf_rvalue(const T& x) {
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
