// Metal stand-in: <metal_simdgroup_matrix>, 8x8 only, T in {half, bfloat, float}.
//
// Lane layout (Apple's, as used by MLX and metal-flash-attention): lane l
// holds row r = 4*(l/16) + (l/2)%4, columns c and c+1 with
// c = 4*((l/8)%2) + 2*(l%2); thread_elements() is that pair (vec<T, 2>).
//
// * simdgroup_matrix(T dval) builds a diagonal matrix (Metal semantics);
//   make_filled_simdgroup_matrix<T, 8, 8>(v) fills every element.
// * The default constructor fills the elements with quiet NaN (Metal leaves
//   them undefined): reading an unset matrix shows up as NaN, not as
//   plausible numbers.
// * simdgroup_load / simdgroup_store: each lane reads / writes only its own
//   two elements: element (r, c) <-> src[(origin.y + r) * elements_per_row +
//   origin.x + c], and with transpose_matrix src[(origin.y + c) *
//   elements_per_row + origin.x + r].
// * simdgroup_multiply_accumulate(d, a, b, c): one simd exchange of every
//   lane's A and B elements (as float); each lane then computes its two
//   elements of D: acc = float(C[r][c]); for k = 0..7: acc = fma(A[r][k],
//   B[k][c], acc) in float; D = acc rounded to nearest even to D's type. Mixed
//   element types (e.g. half A/B with float C/D) are accepted as in Metal. If
//   not all 32 lanes are active the result is NaN (Metal requires all lanes).
// * a * b (same element type): simdgroup_multiply's result.
#pragma once
#include "simd.h"

namespace metal {

template <class T>
inline constexpr bool __mf_sgm_elem = __is_same(T, float) || __is_same(T, half) || __is_same(T, bfloat);

METAL_FUNC uint __mf_sgm_row(uint lane) { return 4u * (lane / 16u) + (lane / 2u) % 4u; }
METAL_FUNC uint __mf_sgm_col(uint lane) { return 4u * ((lane / 8u) % 2u) + 2u * (lane % 2u); }
// Lane holding element (r, c), and the index (0/1) within thread_elements().
METAL_FUNC uint __mf_sgm_lane(uint r, uint c) { return 16u * (r / 4u) + 8u * (c / 4u) + 2u * (r % 4u) + (c % 4u) / 2u; }

template <class T>
METAL_FUNC constexpr T __mf_sgm_from_float(float f) {
  if constexpr (__is_same(T, bfloat))
    return bfloat(f);
  else
    return static_cast<T>(f);
}
template <class T>
METAL_FUNC float __mf_sgm_to_float(T v) {
  return static_cast<float>(v);
}

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(__mf_sgm_elem<T>, "simdgroup_matrix: element type must be half, bfloat or float");
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix: the stand-in supports 8x8 matrices only");
  typedef vec<T, 2> __mf_storage;
  __mf_storage __mf_elems;

  // constexpr so that simdgroup_matrix is a literal type, as in Metal: MLX
  // declares matrices inside `static constexpr` member functions.
  METAL_FUNC constexpr simdgroup_matrix() : __mf_elems() {
    T nan = __mf_sgm_from_float<T>(__builtin_nanf(""));
    __mf_elems[0] = nan;
    __mf_elems[1] = nan;
  }
  // Diagonal matrix with dval on the diagonal.
  METAL_FUNC explicit simdgroup_matrix(T dval) {
    uint lane = __mf_simd_lane();
    uint r = __mf_sgm_row(lane), c = __mf_sgm_col(lane);
    T zero = __mf_sgm_from_float<T>(0.0f);
    __mf_elems[0] = r == c ? dval : zero;
    __mf_elems[1] = r == c + 1u ? dval : zero;
  }
  simdgroup_matrix(const simdgroup_matrix&) = default;
  simdgroup_matrix& operator=(const simdgroup_matrix&) = default;

  // thread_elements(): the calling lane's two elements. On a thread-space
  // (private) object the reference is __private, elsewhere generic.
  METAL_FUNC __private __mf_storage& thread_elements() __private { return __mf_elems; }
  METAL_FUNC const __private __mf_storage& thread_elements() const __private { return __mf_elems; }
  METAL_FUNC __mf_storage& thread_elements() { return __mf_elems; }
  METAL_FUNC const __mf_storage& thread_elements() const { return __mf_elems; }
};

typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;

// Rows defaults to Cols, as in Metal (llama.cpp writes make_filled_simdgroup_matrix<T, 8>(v)).
template <class T, int Cols, int Rows = Cols>
METAL_FUNC simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.__mf_elems[0] = value;
  m.__mf_elems[1] = value;
  return m;
}

// ---- load / store -------------------------------------------------------------
template <class T, int C, int R, class P>
METAL_FUNC void __mf_sgm_load(simdgroup_matrix<T, C, R>& d, P src, ulong elements_per_row, ulong2 matrix_origin,
                              bool transpose_matrix) {
  uint lane = __mf_simd_lane();
  ulong r = __mf_sgm_row(lane), c = __mf_sgm_col(lane);
  ulong ox = matrix_origin.x, oy = matrix_origin.y;
  T e0, e1;
  if (!transpose_matrix) {
    e0 = src[(oy + r) * elements_per_row + ox + c];
    e1 = src[(oy + r) * elements_per_row + ox + c + 1];
  } else {
    e0 = src[(oy + c) * elements_per_row + ox + r];
    e1 = src[(oy + c + 1) * elements_per_row + ox + r];
  }
  d.__mf_elems[0] = e0;
  d.__mf_elems[1] = e1;
}
template <class T, int C, int R, class P>
METAL_FUNC void __mf_sgm_store(const simdgroup_matrix<T, C, R>& a, P dst, ulong elements_per_row, ulong2 matrix_origin,
                               bool transpose_matrix) {
  uint lane = __mf_simd_lane();
  ulong r = __mf_sgm_row(lane), c = __mf_sgm_col(lane);
  ulong ox = matrix_origin.x, oy = matrix_origin.y;
  T e0 = a.__mf_elems[0], e1 = a.__mf_elems[1];
  if (!transpose_matrix) {
    dst[(oy + r) * elements_per_row + ox + c] = e0;
    dst[(oy + r) * elements_per_row + ox + c + 1] = e1;
  } else {
    dst[(oy + c) * elements_per_row + ox + r] = e0;
    dst[(oy + c + 1) * elements_per_row + ox + r] = e1;
  }
}

template <class T, int C, int R>
__MF_OP_FUNC void simdgroup_load(simdgroup_matrix<T, C, R>& d, const __global T* src, ulong elements_per_row = C,
                               ulong2 matrix_origin = 0, bool transpose_matrix = false) {
  __MF_OP(__mf_op_sgm_load_device, 1);
  __MF_OP(__mf_op_sgm_load_device_bytes, 64 * sizeof(T));
  __mf_sgm_load(d, src, elements_per_row, matrix_origin, transpose_matrix);
}
template <class T, int C, int R>
__MF_OP_FUNC void simdgroup_load(simdgroup_matrix<T, C, R>& d, const __local T* src, ulong elements_per_row = C,
                               ulong2 matrix_origin = 0, bool transpose_matrix = false) {
  __MF_OP(__mf_op_sgm_load_threadgroup, 1);
  __MF_OP(__mf_op_sgm_load_threadgroup_bytes, 64 * sizeof(T));
  __mf_sgm_load(d, src, elements_per_row, matrix_origin, transpose_matrix);
}
template <class T, int C, int R>
__MF_OP_FUNC void simdgroup_store(simdgroup_matrix<T, C, R> a, __global T* dst, ulong elements_per_row = C,
                                ulong2 matrix_origin = 0, bool transpose_matrix = false) {
  __MF_OP(__mf_op_sgm_store_device, 1);
  __MF_OP(__mf_op_sgm_store_device_bytes, 64 * sizeof(T));
  __mf_sgm_store(a, dst, elements_per_row, matrix_origin, transpose_matrix);
}
template <class T, int C, int R>
__MF_OP_FUNC void simdgroup_store(simdgroup_matrix<T, C, R> a, __local T* dst, ulong elements_per_row = C,
                                ulong2 matrix_origin = 0, bool transpose_matrix = false) {
  __MF_OP(__mf_op_sgm_store_threadgroup, 1);
  __MF_OP(__mf_op_sgm_store_threadgroup_bytes, 64 * sizeof(T));
  __mf_sgm_store(a, dst, elements_per_row, matrix_origin, transpose_matrix);
}

// ---- multiply -------------------------------------------------------------------
// The profile's op for an MMA: by the wider operand type (float if A or B is
// float, else bfloat if either is, else half) and the accumulator C.
template <class TA, class TB, class TC>
inline constexpr unsigned int __mf_mma_op =
    (__is_same(TA, float) || __is_same(TB, float)) ? __mf_op_mma_f32_f32
    : (__is_same(TA, bfloat) || __is_same(TB, bfloat))
        ? (__is_same(TC, float) ? __mf_op_mma_bf16_f32 : __mf_op_mma_bf16_bf16)
        : (__is_same(TC, float) ? __mf_op_mma_f16_f32 : __mf_op_mma_f16_f16);
template <class TD, class TA, class TB, class TC>
__MF_OP_FUNC void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                              const simdgroup_matrix<TB, 8, 8>& b,
                                              const simdgroup_matrix<TC, 8, 8>& c) {
  __MF_OP((__mf_mma_op<TA, TB, TC>), 1);
  float4 mine = {__mf_sgm_to_float(a.__mf_elems[0]), __mf_sgm_to_float(a.__mf_elems[1]),
                 __mf_sgm_to_float(b.__mf_elems[0]), __mf_sgm_to_float(b.__mf_elems[1])};
  float c0 = __mf_sgm_to_float(c.__mf_elems[0]), c1 = __mf_sgm_to_float(c.__mf_elems[1]);
  __mf_xchg<float4> x = __mf_exchange(mine);
  uint lane = __mf_simd_lane();
  uint r = __mf_sgm_row(lane), col = __mf_sgm_col(lane);
  float acc0 = c0, acc1 = c1;
  if (x.mask != 0xffffffffu) {
    acc0 = acc1 = __builtin_nanf("");
  } else {
    for (uint k = 0; k < 8u; ++k) {
      float4 ak = x.at(__mf_sgm_lane(r, k));
      float av = (k % 2u) ? ak.y : ak.x;
      float4 b0 = x.at(__mf_sgm_lane(k, col));  // B[k][col] and B[k][col + 1] live in the same lane
      acc0 = __builtin_fmaf(av, b0.z, acc0);
      acc1 = __builtin_fmaf(av, b0.w, acc1);
    }
  }
  d.__mf_elems[0] = __mf_sgm_from_float<TD>(acc0);
  d.__mf_elems[1] = __mf_sgm_from_float<TD>(acc1);
}
template <class TD, class TA, class TB>
METAL_FUNC void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                   const simdgroup_matrix<TB, 8, 8>& b) {
  simdgroup_matrix<TD, 8, 8> zero = make_filled_simdgroup_matrix<TD, 8, 8>(__mf_sgm_from_float<TD>(0.0f));
  simdgroup_multiply_accumulate(d, a, b, zero);
}
// a * b: the MSL specification's table of SIMD-group matrix operations
// (section 6.7 in version 3.2, 6.8 in 4.x, "SIMD-Group Matrix Functions")
// lists `operator*` next to simdgroup_multiply (d = a * b) and
// simdgroup_multiply_accumulate (d = a * b + c), one element type T for both
// operands and the result; it defines no +, - or other operator on
// simdgroup_matrix. The product is simdgroup_multiply's, bit for bit (float
// accumulation, one rounding to T). MLX's conv.metal: `(G * g) * Gt`.
template <class T, int Cols, int Rows, int K>
METAL_FUNC simdgroup_matrix<T, Cols, Rows> operator*(const simdgroup_matrix<T, K, Rows>& a,
                                                      const simdgroup_matrix<T, Cols, K>& b) {
  simdgroup_matrix<T, Cols, Rows> d;
  simdgroup_multiply(d, a, b);
  return d;
}

}  // namespace metal
