// Metal stand-in: mpp::tensor_ops::matmul2d (MetalPerformancePrimitives,
// DESIGN.md section 15). Names, static checks and documented semantics
// follow Apple's public 26.x SDK header MPPTensorOpsMatMul2d.h; the code is
// written here.
//
//   C = A * B (+ C)   A: m x k, B: k x n, C: m x n (transpose flags apply to
//                     how A and B are stored); tensors' dimension 0 is the
//                     column, so a row-major m x k A has extents (k, m).
//
// * matmul2d_descriptor(m, n, k = dynamic, transpose_left, transpose_right,
//   relaxed_precision, mode). The cpu backend's dialect (C++17) has no
//   class-type template parameters, so matmul2d takes the descriptor through
//   a constexpr conversion to an integer code; a kernel writes
//   `matmul2d<desc, execution_simdgroup>` exactly as for Metal.
// * run(left, right, destination): each operand a tensor_inline or a
//   cooperative tensor of this op. Every thread of the scope must call it
//   (else a detector finding), execution_simdgroups<N> must match the
//   dispatched SIMD groups (else a finding). Elements outside a tensor's
//   extents read as zero and are not written; k defaults to the left
//   operand's extent. Products are summed in float32 (int32 for integer
//   operands) in k order with one rounding to the destination type per run;
//   relaxed_precision changes no value here (float32 is an accuracy the
//   flag allows); the profile counts such a run's float32 operands as
//   16-bit ones (below).
// * mode::multiply into a cooperative destination adds to what it holds, as
//   observed on hardware (DESIGN.md section 15): zero it first. Reading a
//   destination slot never written is a finding in either mode.
// * Cooperative inputs, conversions from a destination
//   (get_left_input_cooperative_tensor(src), only when
//   is_compatible_as_left_input(src); permuted layouts are never compatible)
//   and the right-hand mirrors need execution_simdgroup and a static k, as
//   Apple's static_asserts say; conversions also need no transpose. A
//   transposed cooperative input holds the operand as stored (k x m for the
//   left, n x k for the right), as MLX's NAX kernels fill it.
// * reduce_rows / reduce_columns (sum, max, min; identity argument defaults
//   to sum's, as in Apple's header) fold in column (row) order.
// * is_iterator_compatible(src, dst) and cooperative_tensor::map_iterator:
//   compatible on the default layout for one SIMD group (a reduction over
//   the source's rows or columns, or the source's shape); never permuted.
// * run()'s work is out of line (kernels call it per pass and per block);
//   its findings are reported by the inlined run(), at the kernel's line.
#pragma once
#include "cooperative_tensor.h"

namespace mpp {
namespace tensor_ops {

enum class reduction_operation {
  sum,
  max,
  min,
};

struct matmul2d_descriptor {
  enum class mode {
    multiply,
    multiply_accumulate,
  };
  int m, n, k;
  bool transpose_left, transpose_right;
  bool relaxed_precision;
  mode matmul_mode;

  constexpr matmul2d_descriptor(int __m, int __n, int __k = static_cast<int>(metal::dynamic_extent),
                                bool __transpose_left = false, bool __transpose_right = false,
                                bool __relaxed_precision = false, mode __matmul_mode = mode::multiply)
      : m(__m), n(__n), k(__k), transpose_left(__transpose_left), transpose_right(__transpose_right),
        relaxed_precision(__relaxed_precision), matmul_mode(__matmul_mode) {}

  // The template-argument encoding (see the header comment).
  static constexpr unsigned long __mf_code(int m, int n, int k, bool tl, bool tr, bool relaxed, mode md) {
    return (unsigned long)(m & 0xffff) | ((unsigned long)(n & 0xffff) << 16) |
           ((unsigned long)(k < 0 ? 0xfffff : (k & 0xfffff)) << 32) | ((unsigned long)tl << 52) |
           ((unsigned long)tr << 53) | ((unsigned long)relaxed << 54) |
           ((unsigned long)(md == mode::multiply_accumulate) << 55) | (1ul << 56);
  }
  constexpr operator unsigned long() const {
    return __mf_code(m, n, k, transpose_left, transpose_right, relaxed_precision, matmul_mode);
  }
  // A program-scope `constant constexpr auto desc = matmul2d_descriptor(...);`
  // lives in the constant address space.
  constexpr operator unsigned long() const __constant {
    return __mf_code(m, n, k, transpose_left, transpose_right, relaxed_precision, matmul_mode);
  }
};

namespace __mf_desc {
constexpr int m(unsigned long c) { return int(c & 0xffff); }
constexpr int n(unsigned long c) { return int((c >> 16) & 0xffff); }
constexpr bool dynamic_k(unsigned long c) { return ((c >> 32) & 0xfffff) == 0xfffff; }
constexpr int k(unsigned long c) { return dynamic_k(c) ? -1 : int((c >> 32) & 0xfffff); }
constexpr bool transpose_left(unsigned long c) { return (c >> 52) & 1; }
constexpr bool transpose_right(unsigned long c) { return (c >> 53) & 1; }
constexpr bool relaxed(unsigned long c) { return (c >> 54) & 1; }
constexpr bool accumulate(unsigned long c) { return (c >> 55) & 1; }
constexpr bool valid(unsigned long c) { return (c >> 56) & 1; }
}  // namespace __mf_desc

template <typename ElementType>
struct reduction_operation_identity {
  static constexpr ElementType sum_identity = ElementType(0);
  static constexpr ElementType max_identity = metal::numeric_limits<ElementType>::lowest();
  static constexpr ElementType min_identity = metal::numeric_limits<ElementType>::max();
};

// ---- element types ------------------------------------------------------------
template <class T>
inline constexpr bool __mf_is_int8 = __is_same(T, char) || __is_same(T, signed char) || __is_same(T, uchar);
// The (left, right, destination) combinations Apple's header lists, without
// the packed 4-, 2-bit and fp8/fp4 formats this stand-in does not model.
template <class L, class R, class D>
inline constexpr bool __mf_supported_types =
    (__is_same(L, half) && __is_same(R, half) && (__is_same(D, half) || __is_same(D, float))) ||
    (__is_same(L, half) && __is_same(R, float) && __is_same(D, float)) ||
    (__is_same(L, float) && __is_same(R, half) && __is_same(D, float)) ||
    (__is_same(L, float) && __is_same(R, float) && __is_same(D, float)) ||
    (__is_same(L, half) && __mf_is_int8<R> && (__is_same(D, half) || __is_same(D, float))) ||
    (__mf_is_int8<L> && __is_same(R, half) && (__is_same(D, half) || __is_same(D, float))) ||
    (__is_same(L, float) && __mf_is_int8<R> && __is_same(D, float)) ||
    (__mf_is_int8<L> && __is_same(R, float) && __is_same(D, float)) ||
    (__mf_is_int8<L> && __mf_is_int8<R> && __is_same(L, R) && __is_same(D, int)) ||
    (__is_same(L, bfloat) && __is_same(R, bfloat) && (__is_same(D, bfloat) || __is_same(D, float))) ||
    (__is_same(L, bfloat) && __is_same(R, float) && __is_same(D, float)) ||
    (__is_same(L, float) && __is_same(R, bfloat) && __is_same(D, float)) ||
    (__is_same(L, bfloat) && __mf_is_int8<R> && (__is_same(D, bfloat) || __is_same(D, float))) ||
    (__mf_is_int8<L> && __is_same(R, bfloat) && (__is_same(D, bfloat) || __is_same(D, float))) ||
    (__is_same(L, bfloat) && __is_same(R, half) && (__is_same(D, bfloat) || __is_same(D, half) || __is_same(D, float))) ||
    (__is_same(L, half) && __is_same(R, bfloat) && (__is_same(D, bfloat) || __is_same(D, half) || __is_same(D, float)));

// Operand kinds: a tensor_inline, or a cooperative tensor.
template <class T>
struct __mf_operand {
  static constexpr bool is_tensor = false, is_coop = false;
  typedef void value_type;
};
template <class E, class X>
struct __mf_operand<metal::tensor<E, X, metal::tensor_inline>> {
  static constexpr bool is_tensor = true, is_coop = false;
  typedef __mf_unqual<E> value_type;
  static constexpr int rank = X::__rank;
  typedef void layout;
};
template <class E, class X, class L>
struct __mf_operand<metal::cooperative_tensor<E, X, L>> {
  static constexpr bool is_tensor = false, is_coop = true;
  typedef E value_type;
  static constexpr int rank = L::rank;
  typedef L layout;
};
template <class T>
using __mf_operand_of = __mf_operand<__mf_unqual<T>>;

// ---- the scope rendezvous ------------------------------------------------------
// Each thread of the scope publishes its operands (cooperative tensors live in
// thread-private memory); readers use them until everyone has computed.
struct __mf_scope_entry {
  const void* left;
  const void* right;
  const void* destination;
  uint present;
  uint pad;
};

template <uint Simdgroups>
struct __mf_scope {
  const __mf_scope_entry* table;
  __mf_scope_entry* mine;
  uint self;  // index of the calling thread in `table`
  // Every thread of the scope entered, in a dispatch of the scope's size
  // (else a finding, and the operation computes nothing: what absent threads
  // would have published cannot be read).
  bool complete;
  // The finding enter() saw, reported by the caller's inlined code (report())
  // so that it points at the kernel's line even when the work is out of line.
  const __constant char* pending;
  uint pending_a, pending_b;
  METAL_FUNC void defer(const __constant char* what, uint a, uint b) {
    if (pending) return;
    pending = what;
    pending_a = a;
    pending_b = b;
  }
  METAL_FUNC void report() const {
    if (pending) __mf_tensor_finding(pending, pending_a, pending_b);
  }

  METAL_FUNC static __mf_scope enter(__mf_scope_entry& entry, const __constant char* operation) {
    __mf_scope s;
    s.complete = true;
    s.pending = nullptr;
    s.pending_a = s.pending_b = ~0u;
    if constexpr (Simdgroups == 0) {
      s.table = &entry;
      s.mine = &entry;
      s.self = 0;
    } else if constexpr (Simdgroups == 1) {
      uint mask = 0;
      s.table = static_cast<const __mf_scope_entry*>(__mf_simd_exchange(&entry, sizeof(entry), &mask));
      s.mine = nullptr;
      s.self = __mf_simd_lane();
      s.complete = mask == 0xffffffffu;
      if (!s.complete)
        s.defer("not every thread of the execution_simdgroup scope entered the tensor operation "
                "(active lane mask, calling lane)",
                mask, s.self);
    } else {
      uint sg = 0, count = 0;
      __mf_scope_position(&sg, &count);
      s.complete = count == Simdgroups;
      if (count != Simdgroups)
        s.defer("the execution_simdgroups<N> scope does not match the dispatch (N, SIMD groups dispatched)",
                Simdgroups, count);
      __mf_scope_entry* slots = static_cast<__mf_scope_entry*>(__mf_scope_slots(sizeof(__mf_scope_entry)));
      s.self = sg * 32u + __mf_simd_lane();
      entry.present = 1;
      slots[s.self] = entry;
      s.table = slots;
      s.mine = slots + s.self;
      __mf_threadgroup_barrier(0);
      const uint threads = (count < Simdgroups ? count : Simdgroups) * 32u;
      for (uint t = 0; t < threads; ++t)
        if (!slots[t].present) {
          s.complete = false;
          s.defer("not every thread of the execution_simdgroups<N> scope entered the tensor operation "
                  "(missing thread, calling thread)",
                  t, s.self);
          break;
        }
    }
    (void)operation;
    return s;
  }
  // Nobody leaves before everyone has read what the others published.
  METAL_FUNC void leave() const {
    if constexpr (Simdgroups == 1) {
      uint mask = 0;
      __mf_simd_exchange(nullptr, 0, &mask);
    } else if constexpr (Simdgroups > 1) {
      __mf_threadgroup_barrier(0);
      mine->present = 0;
    }
  }
  // Slot `slot` of the cooperative tensor that thread `at` published in `which` (0 left, 1 right, 2 destination).
  template <class Coop>
  METAL_FUNC typename Coop::value_type read(metal::__mf_coop_position at, int which, bool& written) const {
    const uint index = Simdgroups == 0 ? 0u : at.simdgroup * 32u + at.lane;
    const __mf_scope_entry& e = table[index];
    const void* p = which == 0 ? e.left : which == 1 ? e.right : e.destination;
    const Coop* c = static_cast<const Coop*>(p);
    written = c->__written[at.slot];
    return c->__v[at.slot];
  }
};

template <class T>
METAL_FUNC auto __mf_widen(T v) {
  if constexpr (__mf_is_int8<T> || __is_same(T, int))
    return int(v);
  else
    return float(v);
}

template <class Scope>
inline constexpr bool __mf_is_scope = metal::is_execution_thread_v<Scope> || metal::is_execution_simdgroups_v<Scope>;

// ---- matmul2d ------------------------------------------------------------------
template <unsigned long Descriptor, typename Scope, class... Args>
class matmul2d {
  static_assert(__mf_is_scope<Scope>, "Scope template argument should be of op_scope type");
  static_assert(__mf_desc::valid(Descriptor), "matmul2d: the descriptor must be a matmul2d_descriptor");
  static_assert(__mf_desc::m(Descriptor) > 0 && __mf_desc::n(Descriptor) > 0, "matmul2d: m and n must be positive");

 public:
  using scope = Scope;
  static constexpr uint __simdgroups = metal::__mf_scope_simdgroups<Scope>;
  static constexpr int __m = __mf_desc::m(Descriptor), __n = __mf_desc::n(Descriptor), __k = __mf_desc::k(Descriptor);
  static constexpr bool __transpose_left = __mf_desc::transpose_left(Descriptor);
  static constexpr bool __transpose_right = __mf_desc::transpose_right(Descriptor);
  static constexpr bool __accumulate = __mf_desc::accumulate(Descriptor);
  static constexpr bool __single_simdgroup = __is_same(Scope, metal::execution_simdgroup);
  // The profile's op for a run (by operand types) and the 8x8 blocks of its
  // m x n; each simdgroup of the scope counts its share. A float32 operand
  // counts as a 16-bit one when the descriptor sets relaxed_precision, which
  // the SDK header documents as allowing "the implementation to sacrifice
  // accuracy for performance" (MPPTensorOpsMatMul2d.h): the cost model's
  // assumption is that such a block runs as 16-bit operands, on the Neural
  // Accelerators where a chip has them (docs/cost_model.md). The values
  // computed here stay float32 products either way.
  static constexpr bool __relaxed_precision = __mf_desc::relaxed(Descriptor);
  template <class LT, class RT>
  static constexpr bool __mf_integer_operands = __mf_is_int8<LT> && __mf_is_int8<RT>;
  template <class LT, class RT>
  static constexpr uint __mf_profile_op =
      __mf_integer_operands<LT, RT>                                                   ? __mf_op_tensor_mma_i8
      : (__is_same(LT, float) || __is_same(RT, float)) && !__relaxed_precision ? __mf_op_tensor_mma_f32
                                                                                      : __mf_op_tensor_mma_f16;
  static constexpr uint __mf_share = __simdgroups > 1 ? __simdgroups : 1;
  static constexpr uint __mf_mn_blocks = uint((__m + 7) / 8) * uint((__n + 7) / 8);
  // Cooperative inputs hold the operand as stored: a transposed left input
  // is k x m, a transposed right input n x k (MLX's steel/attn/nax.h loads
  // K rows into the right input of S = Q K^T).
  static constexpr int __kk = __k > 0 ? __k : 1;
  static constexpr int __left_rows = __transpose_left ? __kk : __m, __left_cols = __transpose_left ? __m : __kk;
  static constexpr int __right_rows = __transpose_right ? __n : __kk, __right_cols = __transpose_right ? __kk : __n;

  METAL_FUNC matmul2d() = default;

  template <class Left, class Right, class Element, class Coord = int, class... CoopArgs>
  using cooperative_tensor_left_input_t =
      metal::cooperative_tensor<Left, metal::dextents<Coord, 2>,
                                metal::__mf_coop_layout<metal::__mf_coop_left, __left_rows, __left_cols, 1, Descriptor>>;
  template <class Left, class Right, class Element, class Coord = int, class... CoopArgs>
  using cooperative_tensor_right_input_t =
      metal::cooperative_tensor<Right, metal::dextents<Coord, 2>,
                                metal::__mf_coop_layout<metal::__mf_coop_right, __right_rows, __right_cols, 1, Descriptor>>;
  template <class LeftOperand, class RightOperand, class Element, class Coord = int, class... CoopArgs>
  using cooperative_tensor_destination_t =
      metal::cooperative_tensor<Element, metal::dextents<Coord, 2>,
                                metal::__mf_coop_layout<metal::__mf_coop_destination, __m, __n, __simdgroups, Descriptor>>;
  template <class LeftOperand, class RightOperand, class Element, class Coord = int, class... CoopArgs>
  using cooperative_tensor_row_reduction_destination_t = metal::cooperative_tensor<
      Element, metal::dextents<Coord, 1>,
      metal::__mf_coop_layout<metal::__mf_coop_row_reduction, __m, __n, __simdgroups, Descriptor>>;
  template <class LeftOperand, class RightOperand, class Element, class Coord = int, class... CoopArgs>
  using cooperative_tensor_column_reduction_destination_t = metal::cooperative_tensor<
      Element, metal::dextents<Coord, 1>,
      metal::__mf_coop_layout<metal::__mf_coop_column_reduction, __m, __n, __simdgroups, Descriptor>>;

  template <class Left, class Right, class Element, class Coord = int, class... CoopArgs>
  METAL_FUNC cooperative_tensor_left_input_t<Left, Right, Element, Coord> get_left_input_cooperative_tensor() const {
    __mf_check_input_types<Left, Right, Element, Coord>();
    return {};
  }
  template <class Left, class Right, class Element, class Coord = int, class... CoopArgs>
  METAL_FUNC cooperative_tensor_right_input_t<Left, Right, Element, Coord> get_right_input_cooperative_tensor() const {
    __mf_check_input_types<Left, Right, Element, Coord>();
    return {};
  }
  template <class LeftOperand, class RightOperand, class Element, class Coord = int, class... CoopArgs>
  METAL_FUNC cooperative_tensor_destination_t<LeftOperand, RightOperand, Element, Coord>
  get_destination_cooperative_tensor() const {
    __mf_check_destination<LeftOperand, RightOperand, Element, Coord>();
    return {};
  }
  template <class LeftOperand, class RightOperand, class Element, class Coord = int, class... CoopArgs>
  METAL_FUNC cooperative_tensor_row_reduction_destination_t<LeftOperand, RightOperand, Element, Coord>
  get_row_reduction_destination_cooperative_tensor() const {
    static_assert(__is_integral(Coord), "CoordType must be an integer type");
    return {};
  }
  template <class LeftOperand, class RightOperand, class Element, class Coord = int, class... CoopArgs>
  METAL_FUNC cooperative_tensor_column_reduction_destination_t<LeftOperand, RightOperand, Element, Coord>
  get_column_reduction_destination_cooperative_tensor() const {
    static_assert(__is_integral(Coord), "CoordType must be an integer type");
    return {};
  }

  // Conversions of another op's destination into this op's input.
  template <class Left, class Right, class Element, class Coord = int, class SrcElem, class SrcExtents, class SrcLayout>
  METAL_FUNC cooperative_tensor_left_input_t<Left, Right, Element, Coord> get_left_input_cooperative_tensor(
      const metal::cooperative_tensor<SrcElem, SrcExtents, SrcLayout>& src) const {
    __mf_check_conversion<Left, SrcElem, SrcExtents, SrcLayout, Coord>(true);
    static_assert(SrcLayout::rows == __m, "Source height must match matmul2d op height");
    static_assert(SrcLayout::cols == __k, "Source width must match matmul2d op inner dimension");
    static_assert(!__transpose_left, "Input cooperative tensor cannot be transposed");
    cooperative_tensor_left_input_t<Left, Right, Element, Coord> out;
    __mf_convert(src, out);
    return out;
  }
  template <class Left, class Right, class Element, class Coord = int, class SrcElem, class SrcExtents, class SrcLayout>
  METAL_FUNC cooperative_tensor_right_input_t<Left, Right, Element, Coord> get_right_input_cooperative_tensor(
      const metal::cooperative_tensor<SrcElem, SrcExtents, SrcLayout>& src) const {
    __mf_check_conversion<Right, SrcElem, SrcExtents, SrcLayout, Coord>(false);
    static_assert(SrcLayout::rows == __k, "Source height must match matmul2d op inner dimension");
    static_assert(SrcLayout::cols == __n, "Source width must match matmul2d op width");
    static_assert(!__transpose_right, "Input cooperative tensor cannot be transposed");
    cooperative_tensor_right_input_t<Left, Right, Element, Coord> out;
    __mf_convert(src, out);
    return out;
  }
  // Whether a destination can be converted in registers; false under
  // permuted layouts, where a kernel must go through threadgroup memory.
  template <class Left, class Right, class Element, class SrcElem, class SrcExtents, class SrcLayout>
  METAL_FUNC bool is_compatible_as_left_input(const metal::cooperative_tensor<SrcElem, SrcExtents, SrcLayout>&) const {
    return SrcLayout::operand == metal::__mf_coop_destination && SrcLayout::simdgroups == 1 &&
           SrcLayout::rows == __m && SrcLayout::cols == __k && !__transpose_left && __mf_tensor_layout_seed() == 0;
  }
  template <class Left, class Right, class Element, class SrcElem, class SrcExtents, class SrcLayout>
  METAL_FUNC bool is_compatible_as_right_input(const metal::cooperative_tensor<SrcElem, SrcExtents, SrcLayout>&) const {
    return SrcLayout::operand == metal::__mf_coop_destination && SrcLayout::simdgroups == 1 &&
           SrcLayout::rows == __k && SrcLayout::cols == __n && !__transpose_right && __mf_tensor_layout_seed() == 0;
  }

  template <class LeftOperand, class RightOperand, class DestinationOperand, class... RunArgs>
  __MF_OP_FUNC void run(LeftOperand& left, RightOperand& right, DestinationOperand& destination) const {
    typedef __mf_operand_of<LeftOperand> L;
    typedef __mf_operand_of<RightOperand> R;
    typedef __mf_operand_of<DestinationOperand> D;
    static_assert((L::is_tensor || L::is_coop) && (R::is_tensor || R::is_coop) && (D::is_tensor || D::is_coop),
                  "matmul2d::run: operands must be tensors or cooperative tensors");
    static_assert(L::rank == 2 && R::rank == 2 && D::rank == 2, "matmul2d::run: operands must have rank 2");
    static_assert(__mf_supported_types<typename L::value_type, typename R::value_type, typename D::value_type>,
                  "matmul2d::run: unsupported combination of left, right and destination element types");
    static_assert(!(L::is_coop || R::is_coop) || __single_simdgroup, "Input cooperative tensors require a single SIMD group");
    static_assert(!(L::is_coop || R::is_coop) || __k > 0, "Inner dimension cannot be dynamic with input cooperative tensors");
    if constexpr (L::is_coop)
      static_assert(L::layout::operand == metal::__mf_coop_left && L::layout::descriptor_code == Descriptor,
                    "matmul2d::run: the left cooperative tensor must come from this op's get_left_input_cooperative_tensor");
    if constexpr (R::is_coop)
      static_assert(R::layout::operand == metal::__mf_coop_right && R::layout::descriptor_code == Descriptor,
                    "matmul2d::run: the right cooperative tensor must come from this op's get_right_input_cooperative_tensor");
    if constexpr (D::is_coop)
      static_assert(D::layout::operand == metal::__mf_coop_destination && D::layout::descriptor_code == Descriptor,
                    "matmul2d::run: the destination cooperative tensor must come from this op's "
                    "get_destination_cooperative_tensor");

    constexpr uint op = __mf_profile_op<typename L::value_type, typename R::value_type>;
    if constexpr (__k > 0) {
      __MF_OP(op, (__mf_mn_blocks * uint((__k + 7) / 8) + __mf_share - 1) / __mf_share);
    } else {
      __MF_OP(op, 0);
    }

    const __mf_run_status status = __mf_run_body(left, right, destination);
    if (status.pending) __mf_tensor_finding(status.pending, status.pending_a, status.pending_b);
    if (status.unwritten_input)
      __mf_tensor_finding("matmul2d::run reads a cooperative input element never written", ~0u, ~0u);
    if (status.unwritten_destination)
      __mf_tensor_finding("matmul2d::run accumulates into a cooperative destination slot never written (zero it "
                          "before the first run)",
                          ~0u, ~0u);
  }

  // The work of run(), out of line: a kernel calls run() per pass and per
  // block, and inlining each copy made large kernels slow to compile on the
  // cpu backend. Findings go back to run(), inlined at the kernel's line.
  struct __mf_run_status {
    const __constant char* pending;
    uint pending_a, pending_b;
    bool unwritten_input, unwritten_destination;
  };
  template <class LeftOperand, class RightOperand, class DestinationOperand>
  __attribute__((noinline)) __mf_run_status __mf_run_body(LeftOperand& left, RightOperand& right,
                                                          DestinationOperand& destination) const {
    __MF_OP(__mf_op_int_add, 0);  // counted by run()'s marker (and the per-8 markers of a dynamic k below)
    typedef __mf_operand_of<LeftOperand> L;
    typedef __mf_operand_of<RightOperand> R;
    typedef __mf_operand_of<DestinationOperand> D;
    constexpr bool integer = __mf_integer_operands<typename L::value_type, typename R::value_type>;
    constexpr uint op = __mf_profile_op<typename L::value_type, typename R::value_type>;
    int k = __k;
    if constexpr (__k <= 0) {
      if constexpr (L::is_tensor) k = int(left.get_extent(__transpose_left ? 1 : 0));
      else k = 1;
    }
    if constexpr (__k <= 0) {
      for (int k8 = 0; k8 < (k + 7) / 8; ++k8) __MF_OP(op, (__mf_mn_blocks + __mf_share - 1) / __mf_share);
    }

    // Tensor operands are read once per run, each thread of the scope a
    // share of their elements, as the hardware reads a tile once (so that the
    // traffic counters and the profile see what a GPU moves); a dynamic k
    // reads them where they are used.
    typedef decltype(__mf_widen(typename L::value_type())) a_t;
    typedef decltype(__mf_widen(typename R::value_type())) b_t;
    constexpr uint threads = __simdgroups ? __simdgroups * 32u : 1u;
    constexpr bool stage_left = L::is_tensor && __k > 0, stage_right = R::is_tensor && __k > 0;
    constexpr int kk_static = __k > 0 ? __k : 1;
    a_t left_share[stage_left ? (__m * kk_static + threads - 1) / threads : 1];
    b_t right_share[stage_right ? (kk_static * __n + threads - 1) / threads : 1];
    const uint self_in_scope = __simdgroups > 1   ? metal::__mf_scope_simdgroup() * 32u + __mf_simd_lane()
                               : __simdgroups == 1 ? __mf_simd_lane()
                                                   : 0u;
    if constexpr (stage_left) {
      for (uint i = self_in_scope; i < uint(__m * __k); i += threads) {
        const int row = int(i) / __k, kk = int(i) % __k;
        left_share[i / threads] = __mf_widen(__transpose_left ? left.__mf_read(row, kk) : left.__mf_read(kk, row));
      }
    }
    if constexpr (stage_right) {
      for (uint i = self_in_scope; i < uint(__k * __n); i += threads) {
        const int kk = int(i) / __n, col = int(i) % __n;
        right_share[i / threads] = __mf_widen(__transpose_right ? right.__mf_read(kk, col) : right.__mf_read(col, kk));
      }
    }

    __mf_scope_entry entry = {stage_left ? static_cast<const void*>(left_share) : static_cast<const void*>(&left),
                              stage_right ? static_cast<const void*>(right_share) : static_cast<const void*>(&right),
                              &destination, 0, 0};
    const __mf_scope<__simdgroups> scope_of_op = __mf_scope<__simdgroups>::enter(entry, "matmul2d::run");
    const uint sg = __simdgroups > 1 ? scope_of_op.self / 32u : 0u;
    const uint lane = __simdgroups ? scope_of_op.self % 32u : 0u;
    __mf_run_status status = {scope_of_op.pending, scope_of_op.pending_a, scope_of_op.pending_b, false, false};
    if (!scope_of_op.complete) {
      scope_of_op.leave();
      return status;
    }
    bool unwritten_input = false, unwritten_destination = false;

    auto a_at = [&](int row, int kk) __attribute__((always_inline)) {
      if constexpr (stage_left) {
        const uint i = uint(row * __k + kk);
        return static_cast<const a_t*>(scope_of_op.table[__simdgroups ? i % threads : 0u].left)[i / threads];
      } else if constexpr (L::is_tensor) {
        return __mf_widen(__transpose_left ? left.__mf_read(row, kk) : left.__mf_read(kk, row));
      } else {
        bool written = true;
        const auto v = scope_of_op.template read<__mf_unqual<LeftOperand>>(
            __transpose_left ? left.__map.owner(kk, row) : left.__map.owner(row, kk), 0,
            written);
        unwritten_input |= !written;
        return __mf_widen(v);
      }
    };
    auto b_at = [&](int kk, int col) __attribute__((always_inline)) {
      if constexpr (stage_right) {
        const uint i = uint(kk * __n + col);
        return static_cast<const b_t*>(scope_of_op.table[__simdgroups ? i % threads : 0u].right)[i / threads];
      } else if constexpr (R::is_tensor) {
        return __mf_widen(__transpose_right ? right.__mf_read(kk, col) : right.__mf_read(col, kk));
      } else {
        bool written = true;
        const auto v = scope_of_op.template read<__mf_unqual<RightOperand>>(
            __transpose_right ? right.__map.owner(col, kk) : right.__map.owner(kk, col), 1,
            written);
        unwritten_input |= !written;
        return __mf_widen(v);
      }
    };
    typedef decltype(__mf_widen(typename D::value_type())) acc_t;
    auto product = [&](int row, int col, acc_t acc) __attribute__((always_inline)) {
      for (int kk = 0; kk < k; ++kk) {
        if constexpr (integer)
          acc += a_at(row, kk) * b_at(kk, col);
        else
          acc = __builtin_fmaf(a_at(row, kk), b_at(kk, col), acc);
      }
      return acc;
    };

    // A dynamic k reads tensor operands where they are used: an element once
    // per output element that needs it, where a GPU reads the tile once per
    // run. So the traffic counters get each thread's share of each such tile
    // once, and the uses are checked by the detectors but kept out of the
    // byte counts (__mf_traffic_pause; a tensor destination's writes count as
    // they happen, its reads by multiply_accumulate are added here too).
    constexpr bool reads_counted_once = ((L::is_tensor && !stage_left) || (R::is_tensor && !stage_right)) &&
                                        __m > 0 && __n > 0;
    if constexpr (reads_counted_once) {
      const ulong kk = ulong(k > 0 ? k : 0);
      if constexpr (L::is_tensor && !stage_left)
        __mf_traffic_add(left.__data, (ulong(__m) * kk * sizeof(typename L::value_type) + threads - 1) / threads);
      if constexpr (R::is_tensor && !stage_right)
        __mf_traffic_add(right.__data, (kk * ulong(__n) * sizeof(typename R::value_type) + threads - 1) / threads);
      if constexpr (D::is_tensor && __accumulate)
        __mf_traffic_add(destination.__data,
                         (ulong(__m) * ulong(__n) * sizeof(typename D::value_type) + threads - 1) / threads);
      __mf_traffic_pause(1u);
    }
    if constexpr (D::is_coop) {
      const typename D::layout::map& m = destination.__map;
      for (int i = 0; i < D::layout::capacity; ++i) {
        int row = 0, col = 0;
        if (!m.coord(sg, lane, uint(i), row, col)) continue;
        // Both modes add to a cooperative destination (multiply: as observed on hardware).
        if (!destination.__written[i]) unwritten_destination = true;
        acc_t acc = destination.__written[i] ? __mf_widen(destination.__v[i]) : acc_t(0);
        destination.__v[i] = static_cast<typename D::value_type>(product(row, col, acc));
        destination.__written[i] = true;
      }
    } else {
      const uint self = __simdgroups ? sg * 32u + lane : 0u;
      for (uint o = self; o < uint(__m * __n); o += threads) {
        const int row = int(o) / __n, col = int(o) % __n;
        if (!destination.__mf_inside(col, row)) continue;
        acc_t acc = __accumulate ? __mf_widen(destination.__mf_read(col, row)) : acc_t(0);
        destination.__mf_write(col, row, product(row, col, acc));
      }
    }
    if constexpr (reads_counted_once) __mf_traffic_pause(0u);
    scope_of_op.leave();
    status.unwritten_input = unwritten_input;
    status.unwritten_destination = unwritten_destination;
    return status;
  }

  // ---- checks and helpers ---------------------------------------------------
  template <class Left, class Right, class Element, class Coord>
  METAL_FUNC static constexpr void __mf_check_input_types() {
    static_assert(__single_simdgroup, "Input cooperative tensors require a single SIMD group");
    static_assert(__is_integral(Coord), "CoordType must be an integer type");
    static_assert(__k > 0, "Inner dimension cannot be dynamic with input cooperative tensors");
    static_assert(__mf_supported_types<Left, Right, Element>,
                  "matmul2d: unsupported combination of left, right and destination element types");
  }
  template <class LeftOperand, class RightOperand, class Element, class Coord>
  METAL_FUNC static constexpr void __mf_check_destination() {
    typedef __mf_operand_of<LeftOperand> L;
    typedef __mf_operand_of<RightOperand> R;
    static_assert((L::is_tensor || L::is_coop) && (R::is_tensor || R::is_coop),
                  "get_destination_cooperative_tensor: the first two template arguments are the operand (tensor) types");
    static_assert(__is_integral(Coord), "CoordType must be an integer type");
    static_assert(__mf_supported_types<typename L::value_type, typename R::value_type, Element>,
                  "matmul2d: unsupported combination of left, right and destination element types");
  }
  template <class Input, class SrcElem, class SrcExtents, class SrcLayout, class Coord>
  METAL_FUNC static constexpr void __mf_check_conversion(bool) {
    static_assert(SrcLayout::simdgroups == 1, "Input cooperative tensors require a single SIMD group");
    static_assert(SrcLayout::operand == metal::__mf_coop_destination, "Source must be matmul2d cooperative destination tensor");
    static_assert(__single_simdgroup, "Input cooperative tensors require a single SIMD group");
    static_assert(SrcExtents::rank() == 2, "Source rank must be 2");
    static_assert(__is_same(typename SrcExtents::index_type, int), "src_extents::index_type must be int");
    static_assert(__is_same(Coord, int), "coord_type must be int");
    static_assert(__is_same(SrcElem, Input), "Source cooperative tensor element type must match matmul2d left input element type");
    static_assert(__k > 0, "Inner dimension cannot be dynamic with input cooperative tensors");
  }
  // Element by element through the coordinates (all 32 lanes take part).
  template <class Src, class Dst>
  METAL_FUNC static void __mf_convert(const Src& src, Dst& out) {
    if (__mf_tensor_layout_seed() != 0)
      __mf_tensor_finding("a cooperative tensor converted to an input without is_compatible_as_*_input (the layouts "
                          "differ)",
                          ~0u, ~0u);
    __mf_scope_entry entry = {&src, nullptr, nullptr, 0, 0};
    const __mf_scope<1> s = __mf_scope<1>::enter(entry, "get_*_input_cooperative_tensor");
    s.report();
    const typename Dst::layout::map& dm = out.__map;
    const typename Src::layout::map& sm = src.__map;
    bool unwritten = false;
    for (int i = 0; s.complete && i < Dst::layout::capacity; ++i) {
      int row = 0, col = 0;
      if (!dm.coord(0, s.self, uint(i), row, col)) continue;
      bool written = true;
      out.__v[i] = s.template read<Src>(sm.owner(row, col), 0, written);
      out.__written[i] = written;
      unwritten |= !written;
    }
    s.leave();
    if (unwritten) __mf_tensor_finding("a converted cooperative tensor reads a source slot never written", ~0u, ~0u);
  }
};

// ---- reductions ------------------------------------------------------------------
// The identity is not deduced: Metal deduces ElementType from the
// cooperative tensors alone in practice (a `constant float` identity has no
// address space there), while C++ for OpenCL would deduce `__constant float`.
template <class T>
struct __mf_type_identity {
  typedef T type;
};
template <class T>
using __mf_non_deduced = typename __mf_type_identity<T>::type;
template <bool Rows, class E, class SX, class DX, class SL, class DL>
__MF_OP_FUNC void __mf_reduce(metal::cooperative_tensor<E, SX, SL>& source, metal::cooperative_tensor<E, DX, DL>& destination,
                              E identity, reduction_operation op) {
  static_assert(SL::operand == metal::__mf_coop_destination, "reduce: the source must be a matmul2d destination");
  static_assert(DL::operand == (Rows ? metal::__mf_coop_row_reduction : metal::__mf_coop_column_reduction),
                "reduce: the destination must come from the op's get_*_reduction_destination_cooperative_tensor");
  static_assert(DL::rows == SL::rows && DL::cols == SL::cols && DL::simdgroups == SL::simdgroups,
                "reduce: source and destination must come from the same op");
  __MF_OP(__mf_op_f32_add, SL::capacity);
  __MF_OP(__mf_op_simd_shuffle, 2 * DL::capacity);
  typedef metal::cooperative_tensor<E, SX, SL> Src;
  __mf_scope_entry entry = {&source, nullptr, nullptr, 0, 0};
  const __mf_scope<SL::simdgroups> s = __mf_scope<SL::simdgroups>::enter(entry, "reduce");
  s.report();
  const uint sg = SL::simdgroups > 1 ? s.self / 32u : 0u, lane = SL::simdgroups ? s.self % 32u : 0u;
  const typename DL::map& dm = destination.__map;
  const typename SL::map& sm = source.__map;
  bool unwritten = false;
  for (int i = 0; s.complete && i < DL::capacity; ++i) {
    int row = 0, col = 0;
    if (!dm.coord(sg, lane, uint(i), row, col)) continue;
    E acc = identity;
    const int count = Rows ? SL::cols : SL::rows;
    for (int j = 0; j < count; ++j) {
      bool written = true;
      const E v = s.template read<Src>(Rows ? sm.owner(row, j) : sm.owner(j, col), 0, written);
      unwritten |= !written;
      if (op == reduction_operation::sum)
        acc = acc + v;
      else if (op == reduction_operation::max)
        acc = v > acc ? v : acc;
      else
        acc = v < acc ? v : acc;
    }
    destination.__v[i] = acc;
    destination.__written[i] = true;
  }
  s.leave();
  if (unwritten) __mf_tensor_finding("reduce_rows/reduce_columns reads a source slot never written", ~0u, ~0u);
}

// Inlined (Apple's are `inline`), so that a finding points at the kernel's call.
template <class ElementType, class SrcExtents, class DstExtents, class SrcLayout, class DstLayout>
METAL_FUNC void reduce_rows(metal::cooperative_tensor<ElementType, SrcExtents, SrcLayout>& source,
                        metal::cooperative_tensor<ElementType, DstExtents, DstLayout>& destination,
                        reduction_operation op = reduction_operation::sum,
                        __mf_non_deduced<ElementType> identity = reduction_operation_identity<ElementType>::sum_identity) {
  __mf_reduce<true>(source, destination, identity, op);
}
template <class ElementType, class SrcExtents, class DstExtents, class SrcLayout, class DstLayout>
METAL_FUNC void reduce_columns(metal::cooperative_tensor<ElementType, SrcExtents, SrcLayout>& source,
                           metal::cooperative_tensor<ElementType, DstExtents, DstLayout>& destination,
                           reduction_operation op = reduction_operation::sum,
                           __mf_non_deduced<ElementType> identity = reduction_operation_identity<ElementType>::sum_identity) {
  __mf_reduce<false>(source, destination, identity, op);
}

// Whether destination.map_iterator(it) finds, in the calling thread, the
// element that corresponds to each element `it` of source. Here: on the
// default layout, for one SIMD group, when the destination is a row (column)
// reduction over as many rows (columns) as the source has, or has the
// source's shape; never under a permuted layout (kernels then take their
// documented fallback through threadgroup memory).
template <class SrcElementType, class DstElementType, class SrcExtents, class DstExtents, class SrcLayout, class DstLayout>
METAL_FUNC bool is_iterator_compatible(const metal::cooperative_tensor<SrcElementType, SrcExtents, SrcLayout>&,
                                       const metal::cooperative_tensor<DstElementType, DstExtents, DstLayout>&) {
  constexpr bool one_simdgroup = SrcLayout::simdgroups == 1 && DstLayout::simdgroups == 1;
  constexpr bool same_shape = DstLayout::rank == 2 && SrcLayout::rows == DstLayout::rows &&
                              SrcLayout::cols == DstLayout::cols;
  constexpr bool rows = DstLayout::operand == metal::__mf_coop_row_reduction && SrcLayout::rows == DstLayout::rows;
  constexpr bool cols = DstLayout::operand == metal::__mf_coop_column_reduction && SrcLayout::cols == DstLayout::cols;
  return SrcLayout::rank == 2 && one_simdgroup && (same_shape || rows || cols) && __mf_tensor_layout_seed() == 0;
}

}  // namespace tensor_ops
}  // namespace mpp
