// Metal stand-in: barriers and SIMD-group / quad-group collectives.
//
// Every collective is one __mf_simd_exchange: each active lane offers its
// value and reads the others' from the returned slots (valid until that
// lane's next exchange). Semantics chosen here (document in tests):
// * Reductions and prefix scans combine the active lanes in lane order
//   0..31 (left fold, starting from the first active lane), so every lane gets
//   the identical, deterministic result. simd_max/min on floating types ignore
//   NaN operands like fmax/fmin.
// * A shuffle/broadcast that reads a lane which is inactive or outside 0..31
//   returns the caller's own value (Metal leaves it undefined). shuffle_up /
//   shuffle_down leave the lower / upper `delta` lanes unchanged (as Metal);
//   rotate_up / rotate_down rotate modulo 32.
// * simd_ballot / simd_active_threads_mask return simd_vote (64-bit vote,
//   bit i = lane i); all() checks only the active lanes.
// * Values: any trivially copyable type of at most 64 bytes for shuffles;
//   arithmetic scalars/vectors (incl. half, bfloat, bfloatN) for sum/product/
//   min/max and prefix scans; integer scalars/vectors for and/or/xor.
// Collectives are function templates, so user code (e.g. MLX's bf16 helpers)
// may add non-template overloads for its own types without conflict.
#pragma once
#include "math.h"

namespace metal {

enum class mem_flags : uint {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
METAL_FUNC constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) | static_cast<uint>(b));
}
METAL_FUNC constexpr mem_flags operator&(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) & static_cast<uint>(b));
}
METAL_FUNC constexpr mem_flags operator^(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) ^ static_cast<uint>(b));
}
METAL_FUNC constexpr mem_flags operator~(mem_flags a) { return static_cast<mem_flags>(~static_cast<uint>(a) & 31u); }

METAL_FUNC void threadgroup_barrier(mem_flags flags) {
  __MF_OP(__mf_op_threadgroup_barrier, 1);
  __mf_threadgroup_barrier(static_cast<uint>(flags));
}
METAL_FUNC void simdgroup_barrier(mem_flags flags) {
  __MF_OP(__mf_op_simdgroup_barrier, 1);
  __mf_simdgroup_barrier(static_cast<uint>(flags));
}

// ---- exchange helper --------------------------------------------------------
// The lanes' values are the executor's memory, read through a private
// pointer: what a collective moves are registers on the GPU, which no
// detector watches, and a generic pointer would send every read of them
// through the detectors' buffer scans (a quarter of a decode test's time).
template <class T>
struct __mf_xchg {
  const __private char* slots;
  uint mask;
  METAL_FUNC bool active(uint lane) const { return lane < 32u && ((mask >> lane) & 1u) != 0u; }
  METAL_FUNC T at(uint lane) const {
    T r;
    __builtin_memcpy(&r, slots + lane * sizeof(T), sizeof(T));
    return r;
  }
};
template <class T>
METAL_FUNC __mf_xchg<T> __mf_exchange(T v) {
  static_assert(sizeof(T) <= 64, "simd collectives: values of at most 64 bytes");
  static_assert(__is_trivially_copyable(T), "simd collectives: the value must be trivially copyable");
  uint mask = 0;
  const void* s = __mf_simd_exchange(&v, sizeof(T), &mask);
  __mf_xchg<T> x = {(const __private char*)s, mask};
  return x;
}

template <class T>
inline constexpr bool __mf_simd_arith_elem = (__mf_is_int<T> || __is_same(T, float) || __is_same(T, half) ||
                                              __is_same(T, bfloat)) &&
                                             !__is_same(T, signed char);
template <class T>
inline constexpr bool __mf_simd_arith = __mf_simd_arith_elem<typename __mf_vt<T>::elem> && !__mf_vt<T>::is_bool_vec;
template <class T>
inline constexpr bool __mf_simd_integer = __mf_is_int<typename __mf_vt<T>::elem> && !__mf_vt<T>::is_bool_vec;

// Element-wise binary op on scalars or vectors (result converted back to the
// element type, e.g. after integer promotion of char + char).
template <class T, class Op>
METAL_FUNC T __mf_ew(T a, T b, Op op) {
  typedef typename __mf_vt<T>::elem E;
  if constexpr (__mf_vt<T>::is_vec) {
    T r = a;
    for (int i = 0; i < __mf_vt<T>::n; ++i) r[i] = static_cast<E>(op(static_cast<E>(a[i]), static_cast<E>(b[i])));
    return r;
  } else {
    return static_cast<T>(op(a, b));
  }
}
struct __mf_op_add {
  template <class E>
  METAL_FUNC auto operator()(E a, E b) const {
    return a + b;
  }
};
struct __mf_op_mul {
  template <class E>
  METAL_FUNC auto operator()(E a, E b) const {
    return a * b;
  }
};
struct __mf_op_and {
  template <class E>
  METAL_FUNC auto operator()(E a, E b) const {
    return a & b;
  }
};
struct __mf_op_or {
  template <class E>
  METAL_FUNC auto operator()(E a, E b) const {
    return a | b;
  }
};
struct __mf_op_xor {
  template <class E>
  METAL_FUNC auto operator()(E a, E b) const {
    return a ^ b;
  }
};
struct __mf_op_max {
  template <class E>
  METAL_FUNC E operator()(E a, E b) const {
    if constexpr (__mf_is_int<E>)
      return a < b ? b : a;
    else
      return (a != a) ? b : (b != b) ? a : (a < b ? b : a);  // fmax: NaN operands ignored
  }
};
struct __mf_op_min {
  template <class E>
  METAL_FUNC E operator()(E a, E b) const {
    if constexpr (__mf_is_int<E>)
      return b < a ? b : a;
    else
      return (a != a) ? b : (b != b) ? a : (b < a ? b : a);
  }
};

// Left fold over the active lanes in [lo, hi); `init` if there are none (or
// as the first operand if have_init).
template <class T, class Op>
METAL_FUNC T __mf_fold(__mf_xchg<T> x, Op op, uint lo, uint hi, T init, bool have_init) {
  T acc = init;
  bool have = have_init;
  for (uint l = lo; l < hi; ++l) {
    if (!x.active(l)) continue;
    T e = x.at(l);
    if (have)
      acc = __mf_ew(acc, e, op);
    else
      acc = e;
    have = true;
  }
  return acc;
}
METAL_FUNC uint __mf_lane() { return __mf_simd_lane(); }

#define __MF_SIMD_REDUCE(NAME, QNAME, OP, PRED, WHAT)                          \
  template <class T>                                                           \
  METAL_FUNC T NAME(T data) {                                                  \
    static_assert(PRED<T>, #NAME ": " WHAT);                                   \
    __MF_OP(__mf_op_simd_reduce, __mf_words<T>);                               \
    return __mf_fold(__mf_exchange(data), OP{}, 0u, 32u, data, false);         \
  }                                                                            \
  template <class T>                                                           \
  METAL_FUNC T QNAME(T data) {                                                 \
    static_assert(PRED<T>, #QNAME ": " WHAT);                                  \
    __MF_OP(__mf_op_simd_reduce, __mf_words<T>);                               \
    uint base = __mf_lane() & ~3u;                                             \
    return __mf_fold(__mf_exchange(data), OP{}, base, base + 4u, data, false); \
  }
#define __MF_ARITH_MSG "the value must be an arithmetic scalar or vector (int types, half, float, bfloat)"
#define __MF_INT_MSG "the value must be an integer scalar or vector"
__MF_SIMD_REDUCE(simd_sum, quad_sum, __mf_op_add, __mf_simd_arith, __MF_ARITH_MSG)
__MF_SIMD_REDUCE(simd_product, quad_product, __mf_op_mul, __mf_simd_arith, __MF_ARITH_MSG)
__MF_SIMD_REDUCE(simd_max, quad_max, __mf_op_max, __mf_simd_arith, __MF_ARITH_MSG)
__MF_SIMD_REDUCE(simd_min, quad_min, __mf_op_min, __mf_simd_arith, __MF_ARITH_MSG)
__MF_SIMD_REDUCE(simd_and, quad_and, __mf_op_and, __mf_simd_integer, __MF_INT_MSG)
__MF_SIMD_REDUCE(simd_or, quad_or, __mf_op_or, __mf_simd_integer, __MF_INT_MSG)
__MF_SIMD_REDUCE(simd_xor, quad_xor, __mf_op_xor, __mf_simd_integer, __MF_INT_MSG)
#undef __MF_SIMD_REDUCE

// Prefix scans over the active lanes in lane order (left fold starting from the
// first active lane); an exclusive scan with no earlier active lane gives 0
// (sum) / 1 (product).
#define __MF_SIMD_SCAN(NAME, QNAME, OP, IDENTITY, INCL)                                                                \
  template <class T>                                                                                                   \
  METAL_FUNC T NAME(T data) {                                                                                          \
    static_assert(__mf_simd_arith<T>, #NAME ": " __MF_ARITH_MSG);                                                      \
    __MF_OP(__mf_op_simd_reduce, __mf_words<T>);                                                                       \
    uint me = __mf_lane();                                                                                             \
    return __mf_fold(__mf_exchange(data), OP{}, 0u, me + (INCL ? 1u : 0u), __mf_vec_ctor_or_scalar<T>(IDENTITY),       \
                     false);                                                                                           \
  }                                                                                                                    \
  template <class T>                                                                                                   \
  METAL_FUNC T QNAME(T data) {                                                                                         \
    static_assert(__mf_simd_arith<T>, #QNAME ": " __MF_ARITH_MSG);                                                     \
    __MF_OP(__mf_op_simd_reduce, __mf_words<T>);                                                                       \
    uint me = __mf_lane();                                                                                             \
    return __mf_fold(__mf_exchange(data), OP{}, me & ~3u, me + (INCL ? 1u : 0u), __mf_vec_ctor_or_scalar<T>(IDENTITY), \
                     false);                                                                                           \
  }
template <class T>
METAL_FUNC T __mf_vec_ctor_or_scalar(int v) {
  if constexpr (__mf_vt<T>::is_vec)
    return __mf_vec_ctor<T>(v);
  else
    return static_cast<T>(v);
}
__MF_SIMD_SCAN(simd_prefix_inclusive_sum, quad_prefix_inclusive_sum, __mf_op_add, 0, true)
__MF_SIMD_SCAN(simd_prefix_exclusive_sum, quad_prefix_exclusive_sum, __mf_op_add, 0, false)
__MF_SIMD_SCAN(simd_prefix_inclusive_product, quad_prefix_inclusive_product, __mf_op_mul, 1, true)
__MF_SIMD_SCAN(simd_prefix_exclusive_product, quad_prefix_exclusive_product, __mf_op_mul, 1, false)
#undef __MF_SIMD_SCAN
#undef __MF_ARITH_MSG
#undef __MF_INT_MSG

// ---- shuffles -----------------------------------------------------------------
template <class T>
METAL_FUNC T __mf_read_lane(T data, uint lane) {
  __mf_xchg<T> x = __mf_exchange(data);
  if (x.active(lane)) return x.at(lane);
  return data;
}
template <class T>
METAL_FUNC T simd_shuffle(T data, ushort simd_lane_id) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  return __mf_read_lane(data, simd_lane_id);
}
template <class T>
METAL_FUNC T simd_broadcast(T data, ushort broadcast_lane_id) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  return __mf_read_lane(data, broadcast_lane_id);
}
template <class T>
METAL_FUNC T simd_shuffle_xor(T data, ushort mask) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  return __mf_read_lane(data, __mf_lane() ^ static_cast<uint>(mask));
}
template <class T>
METAL_FUNC T simd_shuffle_up(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  uint me = __mf_lane();
  return __mf_read_lane(data, me >= delta ? me - delta : 64u);
}
template <class T>
METAL_FUNC T simd_shuffle_down(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  return __mf_read_lane(data, __mf_lane() + delta);
}
template <class T>
METAL_FUNC T simd_shuffle_rotate_up(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  return __mf_read_lane(data, (__mf_lane() + 32u - (delta & 31u)) & 31u);
}
template <class T>
METAL_FUNC T simd_shuffle_rotate_down(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  return __mf_read_lane(data, (__mf_lane() + delta) & 31u);
}
// Sections of `modulo` lanes; lanes whose source falls outside their section
// take filling_data from the corresponding lane of the neighbouring range.
template <class T>
METAL_FUNC T simd_shuffle_and_fill_up(T data, __mf_id<T> filling_data, ushort delta, ushort modulo = 32) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  struct P {
    T d, f;
  } p = {data, filling_data};
  __mf_xchg<P> x = __mf_exchange(p);
  uint me = __mf_lane(), m = modulo, pos = me % m, base = me - pos;
  uint src = pos >= delta ? base + pos - delta : base + m - delta + pos;
  if (!x.active(src)) return data;
  P q = x.at(src);
  if (pos >= delta) return q.d;
  return q.f;
}
template <class T>
METAL_FUNC T simd_shuffle_and_fill_down(T data, __mf_id<T> filling_data, ushort delta, ushort modulo = 32) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  struct P {
    T d, f;
  } p = {data, filling_data};
  __mf_xchg<P> x = __mf_exchange(p);
  uint me = __mf_lane(), m = modulo, pos = me % m, base = me - pos;
  uint src = pos + delta < m ? base + pos + delta : base + pos + delta - m;
  if (!x.active(src)) return data;
  P q = x.at(src);
  if (pos + delta < m) return q.d;
  return q.f;
}
template <class T>
METAL_FUNC T simd_broadcast_first(T data) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  __mf_xchg<T> x = __mf_exchange(data);
  if (x.mask) return x.at(static_cast<uint>(__builtin_ctz(x.mask)));
  return data;
}

template <class T>
METAL_FUNC T quad_shuffle(T data, ushort quad_lane_id) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  return __mf_read_lane(data, quad_lane_id < 4 ? (__mf_lane() & ~3u) + quad_lane_id : 64u);
}
template <class T>
METAL_FUNC T quad_broadcast(T data, ushort quad_lane_id) {
  return quad_shuffle(data, quad_lane_id);
}
template <class T>
METAL_FUNC T quad_shuffle_xor(T data, ushort mask) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  uint me = __mf_lane(), q = (me & 3u) ^ mask;
  return __mf_read_lane(data, q < 4u ? (me & ~3u) + q : 64u);
}
template <class T>
METAL_FUNC T quad_shuffle_up(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  uint me = __mf_lane();
  return __mf_read_lane(data, (me & 3u) >= delta ? me - delta : 64u);
}
template <class T>
METAL_FUNC T quad_shuffle_down(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  uint me = __mf_lane();
  return __mf_read_lane(data, (me & 3u) + delta < 4u ? me + delta : 64u);
}
template <class T>
METAL_FUNC T quad_shuffle_rotate_up(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  uint me = __mf_lane();
  return __mf_read_lane(data, (me & ~3u) + (((me & 3u) + 4u - (delta & 3u)) & 3u));
}
template <class T>
METAL_FUNC T quad_shuffle_rotate_down(T data, ushort delta) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  uint me = __mf_lane();
  return __mf_read_lane(data, (me & ~3u) + (((me & 3u) + delta) & 3u));
}
template <class T>
METAL_FUNC T quad_broadcast_first(T data) {
  __MF_OP(__mf_op_simd_shuffle, __mf_words<T>);
  __mf_xchg<T> x = __mf_exchange(data);
  uint q = (x.mask >> (__mf_lane() & ~3u)) & 15u;
  if (q) return x.at((__mf_lane() & ~3u) + static_cast<uint>(__builtin_ctz(q)));
  return data;
}

// ---- votes --------------------------------------------------------------------
struct simd_vote {
  typedef ulong vote_t;
  vote_t __mf_bits;
  vote_t __mf_active;
  explicit constexpr simd_vote(vote_t v = 0) : __mf_bits(v), __mf_active(~0ul) {}
  constexpr simd_vote(vote_t v, vote_t active) : __mf_bits(v), __mf_active(active) {}
  explicit constexpr operator vote_t() const { return __mf_bits; }
  constexpr bool all() const { return (__mf_bits & __mf_active) == __mf_active; }
  constexpr bool any() const { return __mf_bits != 0; }
};
typedef simd_vote quad_vote;

METAL_FUNC simd_vote simd_ballot(bool expr) {
  __MF_OP(__mf_op_simd_reduce, 1);
  __mf_xchg<bool> x = __mf_exchange(expr);
  ulong bits = 0;
  for (uint l = 0; l < 32u; ++l)
    if (x.active(l) && x.at(l)) bits |= 1ul << l;
  return simd_vote(bits, x.mask);
}
METAL_FUNC simd_vote simd_active_threads_mask() {
  __MF_OP(__mf_op_simd_reduce, 1);
  __mf_xchg<bool> x = __mf_exchange(true);
  return simd_vote(x.mask, x.mask);
}
METAL_FUNC bool simd_all(bool expr) {
  __MF_OP(__mf_op_simd_reduce, 1);
  __mf_xchg<bool> x = __mf_exchange(expr);
  for (uint l = 0; l < 32u; ++l)
    if (x.active(l) && !x.at(l)) return false;
  return true;
}
METAL_FUNC bool simd_any(bool expr) {
  __MF_OP(__mf_op_simd_reduce, 1);
  __mf_xchg<bool> x = __mf_exchange(expr);
  for (uint l = 0; l < 32u; ++l)
    if (x.active(l) && x.at(l)) return true;
  return false;
}
METAL_FUNC bool simd_is_first() {
  __MF_OP(__mf_op_simd_reduce, 1);
  __mf_xchg<bool> x = __mf_exchange(true);
  return x.mask != 0u && static_cast<uint>(__builtin_ctz(x.mask)) == __mf_lane();
}
METAL_FUNC bool simd_is_helper_thread() { return false; }
METAL_FUNC quad_vote quad_ballot(bool expr) {
  simd_vote v = simd_ballot(expr);
  uint base = __mf_lane() & ~3u;
  return quad_vote((v.__mf_bits >> base) & 15ul, (v.__mf_active >> base) & 15ul);
}
METAL_FUNC bool quad_all(bool expr) { return quad_ballot(expr).all(); }
METAL_FUNC bool quad_any(bool expr) { return quad_ballot(expr).any(); }
METAL_FUNC quad_vote quad_active_threads_mask() {
  simd_vote v = simd_active_threads_mask();
  uint base = __mf_lane() & ~3u;
  return quad_vote((v.__mf_bits >> base) & 15ul, (v.__mf_active >> base) & 15ul);
}
METAL_FUNC bool quad_is_first() {
  quad_vote v = quad_active_threads_mask();
  return v.__mf_bits != 0 && static_cast<uint>(__builtin_ctzl(v.__mf_bits)) == (__mf_lane() & 3u);
}
METAL_FUNC bool quad_is_helper_thread() { return false; }

}  // namespace metal
