// Metal stand-in: <metal_atomic>.
//
// C++ for OpenCL predeclares atomic_int, atomic_uint, atomic_long,
// atomic_ulong and atomic_float (as _Atomic(T)); metal::atomic<T> maps to
// those, so `atomic_uint` and `metal::atomic_uint` are the same type.
// atomic<bool> / atomic_bool is a stand-in struct. The *_explicit functions
// take device or threadgroup pointers only (thread-space atomics do not
// compile, as in Metal) and use clang's __c11_atomic / __atomic builtins.
// atomic_fetch_min/max/and/or/xor are integer-only (compile error on float).
#pragma once
#include "memory_scope.h"
#include "simdgroup_matrix.h"

namespace metal {

enum memory_order {
  memory_order_relaxed = __ATOMIC_RELAXED,
  memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE,
  memory_order_acq_rel = __ATOMIC_ACQ_REL,
  memory_order_seq_cst = __ATOMIC_SEQ_CST,
};

struct __mf_atomic_bool {
  bool __mf_value;
};

template <class T>
struct __mf_atomic_sel {
  static_assert(__mf_false<T>, "metal::atomic<T>: T must be int, uint, bool, float, long or ulong");
};
template <>
struct __mf_atomic_sel<int> {
  typedef ::atomic_int type;
};
template <>
struct __mf_atomic_sel<uint> {
  typedef ::atomic_uint type;
};
template <>
struct __mf_atomic_sel<long> {
  typedef ::atomic_long type;
};
template <>
struct __mf_atomic_sel<ulong> {
  typedef ::atomic_ulong type;
};
template <>
struct __mf_atomic_sel<float> {
  typedef ::atomic_float type;
};
template <>
struct __mf_atomic_sel<bool> {
  typedef __mf_atomic_bool type;
};
template <class T>
using atomic = typename __mf_atomic_sel<T>::type;
using ::atomic_float;
using ::atomic_int;
using ::atomic_long;
using ::atomic_uint;
using ::atomic_ulong;
typedef __mf_atomic_bool atomic_bool;

// Value type of an atomic object type (SFINAE-friendly: only atomic types).
template <class A>
struct __mf_atomic_val {};
template <>
struct __mf_atomic_val<::atomic_int> {
  typedef int type;
};
template <>
struct __mf_atomic_val<::atomic_uint> {
  typedef uint type;
};
template <>
struct __mf_atomic_val<::atomic_long> {
  typedef long type;
};
template <>
struct __mf_atomic_val<::atomic_ulong> {
  typedef ulong type;
};
template <>
struct __mf_atomic_val<::atomic_float> {
  typedef float type;
};
template <>
struct __mf_atomic_val<__mf_atomic_bool> {
  typedef bool type;
};
template <class A>
using __mf_av = typename __mf_atomic_val<__mf_unqual<A>>::type;
template <class A>
inline constexpr bool __mf_atomic_is_int = __mf_is_int<__mf_av<A>>;
template <class A>
inline constexpr bool __mf_atomic_is_bool = __is_same(__mf_unqual<A>, __mf_atomic_bool);

#define __MF_ATOMIC_FUNCS(AS)                                                                                         \
  template <class A>                                                                                                  \
  METAL_FUNC void atomic_store_explicit(volatile AS A* object, __mf_av<A> desired, memory_order order) {              \
    if constexpr (__mf_atomic_is_bool<A>)                                                                             \
      __atomic_store_n(&object->__mf_value, desired, order);                                                          \
    else                                                                                                              \
      __c11_atomic_store(object, desired, order);                                                                     \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_load_explicit(const volatile AS A* object, memory_order order) {                       \
    if constexpr (__mf_atomic_is_bool<A>)                                                                             \
      return __atomic_load_n(&object->__mf_value, order);                                                             \
    else                                                                                                              \
      return __c11_atomic_load(object, order);                                                                        \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_exchange_explicit(volatile AS A* object, __mf_av<A> desired, memory_order order) {     \
    if constexpr (__mf_atomic_is_bool<A>)                                                                             \
      return __atomic_exchange_n(&object->__mf_value, desired, order);                                                \
    else                                                                                                              \
      return __c11_atomic_exchange(object, desired, order);                                                           \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC bool atomic_compare_exchange_weak_explicit(volatile AS A* object, __mf_av<A>* expected,                  \
                                                        __mf_av<A> desired, memory_order succ, memory_order fail) {   \
    if constexpr (__mf_atomic_is_bool<A>)                                                                             \
      return __atomic_compare_exchange_n(&object->__mf_value, expected, desired, true, succ, fail);                   \
    else                                                                                                              \
      return __c11_atomic_compare_exchange_weak(object, expected, desired, succ, fail);                               \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC bool atomic_compare_exchange_strong_explicit(volatile AS A* object, __mf_av<A>* expected,                \
                                                          __mf_av<A> desired, memory_order succ, memory_order fail) { \
    if constexpr (__mf_atomic_is_bool<A>)                                                                             \
      return __atomic_compare_exchange_n(&object->__mf_value, expected, desired, false, succ, fail);                  \
    else                                                                                                              \
      return __c11_atomic_compare_exchange_strong(object, expected, desired, succ, fail);                             \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_fetch_add_explicit(volatile AS A* object, __mf_av<A> operand, memory_order order) {    \
    static_assert(!__mf_atomic_is_bool<A>, "atomic_fetch_add_explicit: not available for atomic_bool");               \
    return __c11_atomic_fetch_add(object, operand, order);                                                            \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_fetch_sub_explicit(volatile AS A* object, __mf_av<A> operand, memory_order order) {    \
    static_assert(!__mf_atomic_is_bool<A>, "atomic_fetch_sub_explicit: not available for atomic_bool");               \
    return __c11_atomic_fetch_sub(object, operand, order);                                                            \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_fetch_min_explicit(volatile AS A* object, __mf_av<A> operand, memory_order order) {    \
    static_assert(__mf_atomic_is_int<A>, "atomic_fetch_min_explicit: integer atomics only");                          \
    return __c11_atomic_fetch_min(object, operand, order);                                                            \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_fetch_max_explicit(volatile AS A* object, __mf_av<A> operand, memory_order order) {    \
    static_assert(__mf_atomic_is_int<A>, "atomic_fetch_max_explicit: integer atomics only");                          \
    return __c11_atomic_fetch_max(object, operand, order);                                                            \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_fetch_and_explicit(volatile AS A* object, __mf_av<A> operand, memory_order order) {    \
    static_assert(__mf_atomic_is_int<A>, "atomic_fetch_and_explicit: integer atomics only");                          \
    return __c11_atomic_fetch_and(object, operand, order);                                                            \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_fetch_or_explicit(volatile AS A* object, __mf_av<A> operand, memory_order order) {     \
    static_assert(__mf_atomic_is_int<A>, "atomic_fetch_or_explicit: integer atomics only");                           \
    return __c11_atomic_fetch_or(object, operand, order);                                                             \
  }                                                                                                                   \
  template <class A>                                                                                                  \
  METAL_FUNC __mf_av<A> atomic_fetch_xor_explicit(volatile AS A* object, __mf_av<A> operand, memory_order order) {    \
    static_assert(__mf_atomic_is_int<A>, "atomic_fetch_xor_explicit: integer atomics only");                          \
    return __c11_atomic_fetch_xor(object, operand, order);                                                            \
  }
__MF_ATOMIC_FUNCS(__global)
__MF_ATOMIC_FUNCS(__local)
#undef __MF_ATOMIC_FUNCS

METAL_FUNC void atomic_thread_fence(mem_flags, memory_order order, thread_scope = thread_scope_device) {
  __atomic_thread_fence(order);
}

}  // namespace metal
