// Metal stand-in: <metal_cooperative_tensor> and the execution scopes of
// Metal 4 (DESIGN.md section 15). Names and rules follow Apple's headers
// (metal_cooperative_tensor, __exec/units.h); the code is written here.
//
// * execution_simdgroups<N> (N SIMD groups; execution_simdgroup is <1>) and
//   execution_threads<1> (execution_thread). There is no threadgroup scope.
// * cooperative_tensor<ElementType, Extents, Layout>: thread-private storage
//   of a tensor divided among the threads of a scope. Tensor operations hand
//   them out (mpp::tensor_ops::matmul2d's get_*_cooperative_tensor); their
//   element layout is implementation-defined, so a kernel must use
//   is_valid_element, get_multidimensional_index, load and store, never a
//   guessed position.
// * The layout here (__mf_coop_layout) is MLX NAX's where it applies: the
//   tensor is cut into 16 x 16 fragments, row-major, dealt to the scope's
//   SIMD groups in turn; within a fragment lane l holds rows
//   fm = (l/4 & 4) | (l/2 & 3) and fm + 8, columns fn..fn+3 with
//   fn = 4 * ((l/4 & 2) | (l & 1)): slots 8f + 4(row >= 8) + column % 4 of
//   its f-th fragment (steel/attn/nax.h, BaseNAXFrag::get_coord). Row
//   reductions hold row fm and fm + 8 of each fragment row in every lane of
//   that row; column reductions columns fn..fn+3 in every lane of them.
//   A launch with LaunchOptions::tensor_layout_seed != 0 permutes every
//   layout (a seeded bijection over the scope's (thread, slot) positions), so
//   a kernel that relies on the default layout fails its test.
// * Storage starts as quiet NaN (floating types), and each slot remembers
//   whether it was written: tensor operations that read a slot never written
//   report a detector finding (undefined behaviour in Metal).
#pragma once
#include "tensor.h"
#include "numeric_limits.h"

namespace metal {

// ---- execution scopes ---------------------------------------------------------
template <size_t Size>
struct execution_simdgroups {
  static_assert(Size != 0, "execution_simgroups<0> is not supported");
  static constexpr size_t static_size = Size;
  METAL_FUNC constexpr uint size() const { return uint(Size); }
};
template <size_t Size>
struct execution_threads {
  static_assert(Size == 1, "Only execution_thread<1> is supported");
  static constexpr size_t static_size = Size;
  METAL_FUNC constexpr uint size() const { return uint(Size); }
};
using execution_simdgroup = execution_simdgroups<1>;
using execution_thread = execution_threads<1>;

template <class T>
struct is_execution_simdgroups : false_type {};
template <size_t N>
struct is_execution_simdgroups<execution_simdgroups<N>> : true_type {};
template <class T>
inline constexpr bool is_execution_simdgroups_v = is_execution_simdgroups<__mf_unqual<T>>::value;
template <class T>
struct is_execution_thread : false_type {};
template <size_t N>
struct is_execution_thread<execution_threads<N>> : true_type {};
template <class T>
inline constexpr bool is_execution_thread_v = is_execution_thread<__mf_unqual<T>>::value;

// SIMD groups of a scope; 0 for execution_thread.
template <class Scope>
inline constexpr uint __mf_scope_simdgroups = 0;
template <size_t N>
inline constexpr uint __mf_scope_simdgroups<execution_simdgroups<N>> = uint(N);

// The profile op of a cooperative load or store from a tensor over T's memory.
template <class T>
inline constexpr uint __mf_coop_memory_op_load = __mf_op_device_load;
template <class T>
inline constexpr uint __mf_coop_memory_op_load<__local T> = __mf_op_threadgroup_load;
template <class T>
inline constexpr uint __mf_coop_memory_op_store = __mf_op_device_store;
template <class T>
inline constexpr uint __mf_coop_memory_op_store<__local T> = __mf_op_threadgroup_store;

// ---- layouts ------------------------------------------------------------------
// What a cooperative tensor holds, for the matmul2d descriptor `Desc` (its
// encoding, see MPPTensorOpsMatMul2d's matmul2d_descriptor).
enum __mf_coop_operand : int {
  __mf_coop_left = 0,
  __mf_coop_right = 1,
  __mf_coop_destination = 2,
  __mf_coop_row_reduction = 3,
  __mf_coop_column_reduction = 4,
};

struct __mf_coop_position {
  uint simdgroup, lane, slot;
};

// A seeded affine bijection over positions 0..count-1 (count = threads x
// capacity): position p holds what default position (p * a + b) % count holds.
struct __mf_coop_permutation {
  ulong a = 1, b = 0, inverse_a = 1, count = 1;
  METAL_FUNC static ulong __gcd(ulong x, ulong y) {
    while (y) {
      ulong t = x % y;
      x = y;
      y = t;
    }
    return x;
  }
  METAL_FUNC static __mf_coop_permutation make(uint seed, ulong count) {
    __mf_coop_permutation p;
    p.count = count ? count : 1;
    if (seed == 0 || p.count < 2) return p;
    ulong a = (ulong(seed) * 2654435761ul + 7ul) % p.count;
    if (a < 2) a = 2;
    while (__gcd(a, p.count) != 1) a = a + 1 < p.count ? a + 1 : 1;
    p.a = a;
    p.b = (ulong(seed) * 40503ul + 11ul) % p.count;
    // inverse of a modulo count (extended Euclid on signed values)
    long t = 0, new_t = 1, r = long(p.count), new_r = long(a);
    while (new_r != 0) {
      long q = r / new_r, tmp = t - q * new_t;
      t = new_t;
      new_t = tmp;
      tmp = r - q * new_r;
      r = new_r;
      new_r = tmp;
    }
    p.inverse_a = ulong(t < 0 ? t + long(p.count) : t);
    return p;
  }
  METAL_FUNC ulong to_default(ulong position) const { return (position * a + b) % count; }
  METAL_FUNC ulong from_default(ulong index) const { return ((index + count - b) % count) * inverse_a % count; }
};

// Rows x Cols of an operand (Rank 2), or Rows / Cols entries of a reduction
// (Rank 1), over `Simdgroups` SIMD groups (0: a single thread).
template <int Operand, int Rows, int Cols, uint Simdgroups, ulong Desc>
struct __mf_coop_layout {
  static constexpr int operand = Operand;
  static constexpr ulong descriptor_code = Desc;
  static constexpr uint simdgroups = Simdgroups;
  static constexpr int rows = Rows, cols = Cols;
  static constexpr int rank = (Operand == __mf_coop_row_reduction || Operand == __mf_coop_column_reduction) ? 1 : 2;
  static constexpr int frag_rows = (Rows + 15) / 16, frag_cols = (Cols + 15) / 16;
  static constexpr int fragments = Operand == __mf_coop_row_reduction      ? frag_rows
                                   : Operand == __mf_coop_column_reduction ? frag_cols
                                                                           : frag_rows * frag_cols;
  static constexpr int per_fragment = Operand == __mf_coop_row_reduction      ? 2
                                      : Operand == __mf_coop_column_reduction ? 4
                                                                              : 8;
  static constexpr uint threads = Simdgroups ? 32 * Simdgroups : 1;
  static constexpr int capacity = Simdgroups == 0
                                      ? (Operand == __mf_coop_row_reduction      ? Rows
                                         : Operand == __mf_coop_column_reduction ? Cols
                                                                                 : Rows * Cols)
                                      : ((fragments + int(Simdgroups) - 1) / int(Simdgroups)) * per_fragment;

  // Default layout: the coordinate (row, col) at a position, false for a slot
  // that holds nothing. Reductions report their entry as row (or col) and 0.
  METAL_FUNC static bool default_coord(uint sg, uint lane, uint slot, int& row, int& col) {
    if (Simdgroups == 0) {
      if (rank == 1) {
        row = Operand == __mf_coop_row_reduction ? int(slot) : 0;
        col = Operand == __mf_coop_column_reduction ? int(slot) : 0;
      } else {
        row = int(slot) / Cols;
        col = int(slot) % Cols;
      }
      return int(slot) < capacity;
    }
    // (`local` is a keyword of C++ for OpenCL, which the checker parses the stand-in as.)
    const int nth = int(slot) / per_fragment, e = int(slot) % per_fragment;
    const int f = nth * int(Simdgroups) + int(sg);
    if (f >= fragments) return false;
    const uint qid = lane >> 2;
    const int fm = int((qid & 4u) | ((lane >> 1) & 3u));
    const int fn = int(((qid & 2u) | (lane & 1u)) * 4u);
    if (Operand == __mf_coop_row_reduction) {
      row = f * 16 + fm + e * 8;
      col = 0;
      return row < Rows;
    }
    if (Operand == __mf_coop_column_reduction) {
      row = 0;
      col = f * 16 + fn + e;
      return col < Cols;
    }
    row = (f / frag_cols) * 16 + fm + (e >> 2) * 8;
    col = (f % frag_cols) * 16 + fn + (e & 3);
    return row < Rows && col < Cols;
  }
  // Default position of (row, col) (of entry row / col for reductions: the
  // replica in the lowest lane).
  METAL_FUNC static __mf_coop_position default_owner(int row, int col) {
    __mf_coop_position p = {0, 0, 0};
    if (Simdgroups == 0) {
      p.slot = rank == 1 ? uint(Operand == __mf_coop_row_reduction ? row : col) : uint(row * Cols + col);
      return p;
    }
    if (Operand == __mf_coop_row_reduction) {
      const int f = row / 16, rr = row % 16, fm = rr % 8;
      p.simdgroup = uint(f % int(Simdgroups));
      p.lane = uint(((fm >> 2) << 4) | ((fm & 3) << 1));
      p.slot = uint((f / int(Simdgroups)) * 2 + rr / 8);
      return p;
    }
    if (Operand == __mf_coop_column_reduction) {
      const int f = col / 16, cc = col % 16, fn4 = cc / 4;
      p.simdgroup = uint(f % int(Simdgroups));
      p.lane = uint(((fn4 >> 1) << 3) | (fn4 & 1));
      p.slot = uint((f / int(Simdgroups)) * 4 + cc % 4);
      return p;
    }
    const int f = (row / 16) * frag_cols + col / 16, rr = row % 16, cc = col % 16;
    const int fm = rr % 8, fn4 = cc / 4;
    p.simdgroup = uint(f % int(Simdgroups));
    p.lane = uint(((fm >> 2) << 4) | ((fn4 >> 1) << 3) | ((fm & 3) << 1) | (fn4 & 1));
    p.slot = uint((f / int(Simdgroups)) * 8 + (rr / 8) * 4 + cc % 4);
    return p;
  }

  // The layout of this launch (permuted when the launch asks for it).
  struct map {
    __mf_coop_permutation perm;
    METAL_FUNC static map current() {
      map m;
      m.perm = __mf_coop_permutation::make(__mf_tensor_layout_seed(), ulong(threads) * ulong(capacity));
      return m;
    }
    METAL_FUNC bool coord(uint sg, uint lane, uint slot, int& row, int& col) const {
      if (perm.a == 1 && perm.b == 0) return default_coord(sg, lane, slot, row, col);
      const uint thread_in_scope = Simdgroups ? sg * 32u + lane : 0u;
      const ulong d = perm.to_default(ulong(thread_in_scope) * ulong(capacity) + slot);
      const uint t = uint(d / ulong(capacity));
      return default_coord(Simdgroups ? t / 32u : 0u, Simdgroups ? t % 32u : 0u, uint(d % ulong(capacity)), row, col);
    }
    METAL_FUNC __mf_coop_position owner(int row, int col) const {
      __mf_coop_position p = default_owner(row, col);
      if (perm.a == 1 && perm.b == 0) return p;
      const ulong t = Simdgroups ? ulong(p.simdgroup) * 32ul + p.lane : 0ul;
      const ulong q = perm.from_default(t * ulong(capacity) + p.slot);
      const uint thread_in_scope = uint(q / ulong(capacity));
      __mf_coop_position r;
      r.simdgroup = Simdgroups ? thread_in_scope / 32u : 0u;
      r.lane = Simdgroups ? thread_in_scope % 32u : 0u;
      r.slot = uint(q % ulong(capacity));
      return r;
    }
  };
};

template <class T>
struct __mf_is_coop_layout : false_type {};
template <int O, int R, int C, uint S, ulong D>
struct __mf_is_coop_layout<__mf_coop_layout<O, R, C, S, D>> : true_type {};

// The calling thread's place in a scope of `Simdgroups` SIMD groups.
METAL_FUNC uint __mf_scope_simdgroup() {
  uint sg = 0, count = 0;
  __mf_scope_position(&sg, &count);
  return sg;
}

template <class T>
METAL_FUNC T __mf_unset_value() {
  if constexpr (__is_same(T, float) || __is_same(T, half))
    return T(__builtin_nanf(""));
  else if constexpr (__is_same(T, bfloat))
    return bfloat(__builtin_nanf(""));
  else
    return T(0);
}

template <class ElementType, class Extents, class Layout>
struct cooperative_tensor {
  static_assert(__mf_is_coop_layout<Layout>::value,
                "cooperative_tensor: get cooperative tensors from a tensor operation (e.g. matmul2d's "
                "get_destination_cooperative_tensor); the cpu backend knows only those layouts");
  typedef ElementType element_type;
  typedef ElementType value_type;
  typedef Extents extents_type;
  typedef typename Extents::index_type index_type;
  typedef Layout layout;
  typedef ushort thread_index_type;
  typedef ushort thread_size_type;
  typedef size_t rank_type;
  static constexpr int __capacity = Layout::capacity;

  element_type __v[__capacity];
  bool __written[__capacity];
  // This launch's layout and the thread's place in the scope, looked up once
  // (every element access needs them).
  typename Layout::map __map;
  uint __sg, __lane;

  METAL_FUNC cooperative_tensor() { __mf_init(); }
  // Registers on a GPU: nothing to count in the profile.
  __MF_OP_FUNC void __mf_init() {
    __MF_OP(__mf_op_int_add, 0);
    __map = Layout::map::current();
    __sg = __mf_simdgroup();
    __lane = __mf_lane();
    for (int i = 0; i < __capacity; ++i) {
      __v[i] = __mf_unset_value<element_type>();
      __written[i] = false;
    }
  }

  METAL_FUNC static constexpr rank_type get_rank() { return Layout::rank; }
  METAL_FUNC constexpr thread_size_type get_capacity() const { return thread_size_type(__capacity); }

  // This thread's (simdgroup, lane) within the scope.
  METAL_FUNC static uint __mf_simdgroup() { return Layout::simdgroups > 1 ? __mf_scope_simdgroup() : 0u; }
  METAL_FUNC static uint __mf_lane() { return Layout::simdgroups ? __mf_simd_lane() : 0u; }

  // Out of line on the cpu backend: kernels unroll their loops over a
  // tensor's slots (Apple asks for it), and hundreds of inlined copies of the
  // layout arithmetic made large kernels slow to compile.
  __MF_OP_OUT_OF_LINE bool is_valid_element(thread_index_type idx) const {
    __MF_OP(__mf_op_int_add, 0);  // known at compile time once the capacity loop is unrolled
    int row = 0, col = 0;
    return int(idx) < __capacity && __map.coord(__sg, __lane, idx, row, col);
  }
  // Coordinates of slot idx; dimension 0 is the column (fastest-varying).
  __MF_OP_OUT_OF_LINE array<index_type, Layout::rank> get_multidimensional_index(thread_index_type idx) const {
    // A function of the lane and the slot only: with the capacity loop
    // unrolled, the GPU compiler computes it once per thread, outside the
    // kernel's loops (as MLX computes its fragment coordinates once).
    __MF_OP(__mf_op_int_add, 0);
    int row = 0, col = 0;
    __map.coord(__sg, __lane, idx, row, col);
    array<index_type, Layout::rank> r;
    if constexpr (Layout::rank == 1) {
      r[0] = index_type(Layout::operand == __mf_coop_row_reduction ? row : col);
    } else {
      r[0] = index_type(col);
      r[1] = index_type(row);
    }
    return r;
  }

  // Unchecked access, as in Metal; a mutable access counts as a write.
  METAL_FUNC element_type& operator[](thread_index_type idx) {
    __written[idx] = true;
    return __v[idx];
  }
  METAL_FUNC const element_type& operator[](thread_index_type idx) const { return __v[idx]; }
  METAL_FUNC value_type get(thread_index_type idx) const { return is_valid_element(idx) ? __v[idx] : value_type(0); }
  METAL_FUNC void set(thread_index_type idx, value_type v) {
    if (is_valid_element(idx)) (*this)[idx] = v;
  }

  // load / store: no element conversion (the tensor's value type must be
  // element_type); elements outside the tensor's extents read as zero and
  // are not written.
  template <class T, class E>
  __MF_OP_FUNC void load(const tensor<T, E, tensor_inline>& t) {
    static_assert(__is_same(__mf_unqual<T>, element_type),
                  "cooperative_tensor::load: the tensor's element type must be the cooperative tensor's");
    __MF_OP(__mf_coop_memory_op_load<T>, __capacity);  // one instruction per slot, from device or threadgroup memory
    const typename Layout::map& m = __map;
    const uint sg = __sg, lane = __lane;
    for (int i = 0; i < __capacity; ++i) {
      int row = 0, col = 0;
      if (!m.coord(sg, lane, uint(i), row, col)) continue;
      __v[i] = Layout::rank == 1 ? t.__mf_read(Layout::operand == __mf_coop_row_reduction ? row : col, 0)
                                 : t.__mf_read(col, row);
      __written[i] = true;
    }
  }
  template <class T, class E>
  __MF_OP_FUNC void store(const tensor<T, E, tensor_inline>& t) const {
    static_assert(__is_same(__mf_unqual<T>, element_type),
                  "cooperative_tensor::store: the tensor's element type must be the cooperative tensor's");
    __MF_OP(__mf_coop_memory_op_store<T>, __capacity);
    const typename Layout::map& m = __map;
    const uint sg = __sg, lane = __lane;
    for (int i = 0; i < __capacity; ++i) {
      int row = 0, col = 0;
      if (!m.coord(sg, lane, uint(i), row, col)) continue;
      if (!__written[i]) __mf_tensor_finding("cooperative_tensor::store reads a slot never written: slot", uint(i), ~0u);
      // Reductions hold each entry in several lanes: one of them writes it.
      const __mf_coop_position at = m.owner(row, col);
      if (at.simdgroup != sg || at.lane != lane || at.slot != uint(i)) continue;
      if (Layout::rank == 1)
        t.__mf_write(Layout::operand == __mf_coop_row_reduction ? row : col, 0, __v[i]);
      else
        t.__mf_write(col, row, __v[i]);
    }
  }

  // Iteration over this thread's slots (valid or not: check is_valid_element).
  struct iterator {
    cooperative_tensor* _ct;
    thread_index_type _idx;
    METAL_FUNC element_type& operator*() const { return (*_ct)[_idx]; }
    METAL_FUNC iterator& operator++() {
      ++_idx;
      return *this;
    }
    METAL_FUNC iterator operator++(int) {
      iterator old = *this;
      ++_idx;
      return old;
    }
    METAL_FUNC bool operator==(const iterator& o) const { return _idx == o._idx; }
    METAL_FUNC bool operator!=(const iterator& o) const { return _idx != o._idx; }
    METAL_FUNC bool is_valid_element() const { return _ct->is_valid_element(_idx); }
    METAL_FUNC array<index_type, Layout::rank> get_multidimensional_index() const {
      return _ct->get_multidimensional_index(_idx);
    }
  };
  METAL_FUNC iterator begin() { return iterator{this, 0}; }
  METAL_FUNC iterator end() { return iterator{this, thread_index_type(__capacity)}; }
  METAL_FUNC iterator get_iterator(thread_index_type idx) { return iterator{this, idx}; }

  // map_iterator(it): the iterator of *this at the element that corresponds
  // to the element of another cooperative tensor that `it` points at (a row
  // reduction: the element's row; a column reduction: its column; the same
  // shape: the same element), held by the calling thread. Meaningful only
  // where mpp::tensor_ops::is_iterator_compatible(other, *this) holds (here:
  // the default layout, one SIMD group, matching rows or columns); anywhere
  // else it is a finding and gives end().
  template <class OtherIterator>
  __MF_OP_OUT_OF_LINE iterator map_iterator(OtherIterator it) {
    // With the loops unrolled, a register of this thread: computed at compile time on a GPU.
    __MF_OP(__mf_op_int_add, 0);
    const auto at = it.get_multidimensional_index();
    const int col = at.size() == 2 ? int(at[0]) : 0, row = at.size() == 2 ? int(at[1]) : int(at[0]);
    const __mf_coop_position p = __map.owner(row, col);
    int r = 0, c = 0;
    const bool held = int(p.slot) < __capacity && __map.coord(__sg, __lane, p.slot, r, c) &&
                      (Layout::operand == __mf_coop_column_reduction || r == row) &&
                      (Layout::operand == __mf_coop_row_reduction || c == col);
    if (!held) {
      __mf_tensor_finding("map_iterator: this thread does not hold the corresponding element (check "
                          "is_iterator_compatible first): row, column",
                          uint(row), uint(col));
      return end();
    }
    return iterator{this, thread_index_type(p.slot)};
  }
  METAL_FUNC bool is_valid_element(iterator it) const { return is_valid_element(it._idx); }
  METAL_FUNC array<index_type, Layout::rank> get_multidimensional_index(iterator it) const {
    return get_multidimensional_index(it._idx);
  }
};

template <class T>
struct __mf_is_cooperative_tensor : false_type {};
template <class E, class X, class L>
struct __mf_is_cooperative_tensor<cooperative_tensor<E, X, L>> : true_type {};
template <class T>
inline constexpr bool __mf_is_cooperative_tensor_v = __mf_is_cooperative_tensor<__mf_unqual<T>>::value;

}  // namespace metal
