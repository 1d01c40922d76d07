// Metal stand-in: __mf_unqual<T>, T without const, volatile and address
// space. Its own header because the lowering helpers (lowering_support.h,
// force-included through abi.h) need it before the scalar types exist.
#pragma once

// Strips const, volatile and OpenCL address spaces (template deduction in C++
// for OpenCL keeps the address space of the argument, e.g. `__private float`).
template <class T>
struct __mf_unqual_c {
  typedef T type;
};
template <class T>
struct __mf_unqual_c<const T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<volatile T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<__private T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<__global T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<__local T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<__constant T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<__generic T> {
  typedef typename __mf_unqual_c<T>::type type;
};
// `const` with an address space matches both `const T` and `__X T`: one
// specialization each, more specialized than either (else ambiguous, e.g.
// for `tensor<device const half, ...>`).
template <class T>
struct __mf_unqual_c<const __private T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<const __global T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<const __local T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<const __constant T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
struct __mf_unqual_c<const __generic T> {
  typedef typename __mf_unqual_c<T>::type type;
};
template <class T>
using __mf_unqual = typename __mf_unqual_c<T>::type;
