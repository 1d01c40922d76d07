// Metal 4 TensorOps (mpp::tensor_ops::matmul2d, cooperative tensors) on the
// cpu backend's stand-in, written only against the documented API (no
// guessed cooperative-tensor layout) unless a kernel's comment says
// otherwise. tests/cpu/tensor_ops_test.cpp compares the results with plain
// loops and checks the detector findings of the deliberately wrong kernels.
//
// Defines (each with a default):
//   TYPE_L, TYPE_R, TYPE_D   left, right and destination element types
//   MM, NN, KK   the descriptor's m, n, k (KK 0: dynamic k, read from the left operand)
//   TRL, TRR     transpose_left, transpose_right (0 or 1)
//   ACC          0: mode::multiply, 1: mode::multiply_accumulate
//   SG           the scope: 0 execution_thread, 1 execution_simdgroup, N execution_simdgroups<N>
//   RUNS         how often run() is called on the same operands
//   STATIC_SLICE 1: interior tiles use slice<E...> views with static extents
//   ITER         1: cooperative tensors are zeroed through begin()/end() iterators
//   TYPE_S           element type of the converted cooperative tensor (convert_* kernels)
//   K2           the second product's inner dimension (convert_* kernels)
//   OPERAND      layout_map: 0 left input, 1 right input, 2 destination, 3 row reduction, 4 column reduction
//   KERNELS      which kernels to compile (0: all that compile with these defines): 1 matmul_tensors,
//                matmul_cooperative, matmul_threadgroup; 2 matmul_cooperative_inputs; 3 convert_*;
//                4 reductions; 5 layout_map; 6 guessed_layout and the misuse kernels; 7 thread_memory
//
// Matrices are row-major in device memory, inputs `device const`. A is
// M x K (stored K x M when TRL), B is K x N (stored N x K when TRR), C is
// M x N; Shape gives the sizes and row strides. A tensor over a stored
// R x C matrix has extents (C, R): dimension 0 is the column.
#include <metal_stdlib>
#include <metal_tensor>
#include <metal_cooperative_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

#ifndef TYPE_L
#define TYPE_L half
#endif
#ifndef TYPE_R
#define TYPE_R half
#endif
#ifndef TYPE_D
#define TYPE_D float
#endif
#ifndef MM
#define MM 32
#endif
#ifndef NN
#define NN 16
#endif
#ifndef KK
#define KK 16
#endif
#ifndef TRL
#define TRL 0
#endif
#ifndef TRR
#define TRR 0
#endif
#ifndef ACC
#define ACC 0
#endif
#ifndef SG
#define SG 1
#endif
#ifndef RUNS
#define RUNS 1
#endif
#ifndef STATIC_SLICE
#define STATIC_SLICE 0
#endif
#ifndef ITER
#define ITER 0
#endif
#ifndef TYPE_S
#define TYPE_S TYPE_L
#endif
#ifndef K2
#define K2 16
#endif
#ifndef OPERAND
#define OPERAND 2
#endif
#ifndef KERNELS
#define KERNELS 0
#endif
#define WITH(group) (KERNELS == 0 || KERNELS == group)

#if SG == 0
typedef execution_thread Scope;
#elif SG == 1
typedef execution_simdgroup Scope;
#else
typedef execution_simdgroups<SG> Scope;
#endif

struct Shape {
  int M, N, K;        // A: M x K, B: K x N, C: M x N
  int lda, ldb, ldc;  // row strides of the stored matrices, in elements
};

// A tensor over a stored rows x cols matrix with row stride ld.
template <class T>
tensor<device T, dextents<int, 2>, tensor_inline> dense(device T* data, int rows, int cols, int ld) {
  return tensor<device T, dextents<int, 2>, tensor_inline>(data, dextents<int, 2>(cols, rows), array<int, 2>({1, ld}));
}

#define MODE (ACC ? matmul2d_descriptor::mode::multiply_accumulate : matmul2d_descriptor::mode::multiply)
#define DESCRIPTOR matmul2d_descriptor(MM, NN, KK > 0 ? KK : static_cast<int>(dynamic_extent), TRL, TRR, false, MODE)

// The tile of C at (row0, col0) this scope computes: which one depends on
// the scope (a threadgroup, a SIMD group or a thread per tile).
struct Tile {
  int row0, col0;
};
Tile tile_of(uint2 tgid, uint tid, uint sg, uint sgs, uint threads) {
  uint row_tile = tgid.y;
  if (SG == 1) row_tile = tgid.y * sgs + sg;
  if (SG == 0) row_tile = tgid.y * threads + tid;
  return Tile{int(row_tile) * MM, int(tgid.x) * NN};
}

template <class Op, class A, class B, class C>
void run_tensors(thread const Op& op, thread A& a, thread B& b, thread C& c) {
  for (int r = 0; r < RUNS; ++r) op.run(a, b, c);
}

// Sets every valid element of a cooperative tensor.
template <class CT, class T>
void zero(thread CT& ct, T value) {
#if ITER
  for (auto it = ct.begin(); it != ct.end(); ++it)
    if (ct.is_valid_element(it)) *it = value;
#else
  for (ushort i = 0; i < ct.get_capacity(); ++i)
    if (ct.is_valid_element(i)) ct[i] = value;
#endif
}

#if WITH(1)
// C (+)= A * B over device tensors, slices of the whole matrices: tiles at
// the edges have extents smaller than the descriptor.
kernel void matmul_tensors(device const TYPE_L* A [[buffer(0)]], device const TYPE_R* B [[buffer(1)]],
                           device TYPE_D* C [[buffer(2)]], constant Shape& s [[buffer(3)]],
                           uint2 tgid [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]], uint sgs [[simdgroups_per_threadgroup]],
                           uint threads [[threads_per_threadgroup]]) {
  constexpr auto desc = DESCRIPTOR;
  matmul2d<desc, Scope> op;
  const Tile t = tile_of(tgid, tid, sg, sgs, threads);
  auto tA = dense(A, TRL ? s.K : s.M, TRL ? s.M : s.K, s.lda);
  auto tB = dense(B, TRR ? s.N : s.K, TRR ? s.K : s.N, s.ldb);
  auto tC = dense(C, s.M, s.N, s.ldc);
#if STATIC_SLICE
  // Interior tiles as Apple's header shows them: views with static extents.
  if (t.row0 + MM <= s.M && t.col0 + NN <= s.N) {
    constexpr size_t k_extent = KK > 0 ? size_t(KK) : dynamic_extent;
    auto mC = tC.slice<NN, MM>(t.col0, t.row0);
#if TRL
    auto mA = tA.slice<MM, k_extent>(t.row0, 0);
#else
    auto mA = tA.slice<k_extent, MM>(0, t.row0);
#endif
#if TRR
    auto mB = tB.slice<k_extent, NN>(0, t.col0);
#else
    auto mB = tB.slice<NN, k_extent>(t.col0, 0);
#endif
    run_tensors(op, mA, mB, mC);
    return;
  }
#endif
  auto mA = TRL ? tA.slice(t.row0, 0) : tA.slice(0, t.row0);
  auto mB = TRR ? tB.slice(0, t.col0) : tB.slice(t.col0, 0);
  auto mC = tC.slice(t.col0, t.row0);
  run_tensors(op, mA, mB, mC);
}

// The same products into a cooperative destination: zeroed (multiply) or
// loaded from C (multiply_accumulate), run RUNS times, stored to C.
kernel void matmul_cooperative(device const TYPE_L* A [[buffer(0)]], device const TYPE_R* B [[buffer(1)]],
                               device TYPE_D* C [[buffer(2)]], constant Shape& s [[buffer(3)]],
                               uint2 tgid [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint sg [[simdgroup_index_in_threadgroup]], uint sgs [[simdgroups_per_threadgroup]],
                               uint threads [[threads_per_threadgroup]]) {
  constexpr auto desc = DESCRIPTOR;
  matmul2d<desc, Scope> op;
  const Tile t = tile_of(tgid, tid, sg, sgs, threads);
  auto tA = dense(A, TRL ? s.K : s.M, TRL ? s.M : s.K, s.lda);
  auto tB = dense(B, TRR ? s.N : s.K, TRR ? s.K : s.N, s.ldb);
  auto tC = dense(C, s.M, s.N, s.ldc);
  auto mA = TRL ? tA.slice(t.row0, 0) : tA.slice(0, t.row0);
  auto mB = TRR ? tB.slice(0, t.col0) : tB.slice(t.col0, 0);
  auto mC = tC.slice(t.col0, t.row0);
  auto ct = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
#if ACC
  ct.load(mC);
#else
  zero(ct, TYPE_D(0));
#endif
  run_tensors(op, mA, mB, ct);
  ct.store(mC);
}

#if KK > 0
// Every operand in threadgroup memory: the tile of A, B (and C for
// multiply_accumulate) is staged as stored, only the part inside the
// matrices (the rest stays uninitialized, so a read of it outside the
// tensors' extents is a detector finding); the result is copied out.
// One scope per threadgroup; KK static.
kernel void matmul_threadgroup(device const TYPE_L* A [[buffer(0)]], device const TYPE_R* B [[buffer(1)]],
                               device TYPE_D* C [[buffer(2)]], constant Shape& s [[buffer(3)]],
                               uint2 tgid [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint threads [[threads_per_threadgroup]]) {
  threadgroup TYPE_L a_tile[MM * KK];
  threadgroup TYPE_R b_tile[KK * NN];
  threadgroup TYPE_D c_tile[MM * NN];
  constexpr auto desc = DESCRIPTOR;
  matmul2d<desc, Scope> op;
  const int row0 = int(tgid.y) * MM, col0 = int(tgid.x) * NN;
  const int rows = min(MM, s.M - row0), cols = min(NN, s.N - col0), ks = min(KK, s.K);
  // Stored tiles: A is rows x ks (ks x rows when TRL), B ks x cols (cols x ks when TRR).
  const int a_rows = TRL ? ks : rows, a_cols = TRL ? rows : ks;
  const int b_rows = TRR ? cols : ks, b_cols = TRR ? ks : cols;
  for (uint i = tid; i < uint(a_rows * a_cols); i += threads) {
    const int r = int(i) / a_cols, c = int(i) % a_cols;
    a_tile[r * (TRL ? MM : KK) + c] = TRL ? A[r * s.lda + row0 + c] : A[(row0 + r) * s.lda + c];
  }
  for (uint i = tid; i < uint(b_rows * b_cols); i += threads) {
    const int r = int(i) / b_cols, c = int(i) % b_cols;
    b_tile[r * (TRR ? KK : NN) + c] = TRR ? B[(col0 + r) * s.ldb + c] : B[r * s.ldb + col0 + c];
  }
  if (ACC)
    for (uint i = tid; i < uint(rows * cols); i += threads)
      c_tile[(int(i) / cols) * NN + int(i) % cols] = C[(row0 + int(i) / cols) * s.ldc + col0 + int(i) % cols];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  tensor<threadgroup TYPE_L, dextents<int, 2>, tensor_inline> mA(a_tile, dextents<int, 2>(a_cols, a_rows),
                                                                 array<int, 2>({1, TRL ? MM : KK}));
  tensor<threadgroup TYPE_R, dextents<int, 2>, tensor_inline> mB(b_tile, dextents<int, 2>(b_cols, b_rows),
                                                                 array<int, 2>({1, TRR ? KK : NN}));
  tensor<threadgroup TYPE_D, dextents<int, 2>, tensor_inline> mC(c_tile, dextents<int, 2>(cols, rows),
                                                                 array<int, 2>({1, NN}));
  op.run(mA, mB, mC);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = tid; i < uint(rows * cols); i += threads)
    C[(row0 + int(i) / cols) * s.ldc + col0 + int(i) % cols] = c_tile[(int(i) / cols) * NN + int(i) % cols];
}
#endif
#endif  // WITH(1)

#if WITH(2) && KK > 0 && !TRL && !TRR
// Cooperative inputs filled element by element through
// get_multidimensional_index (the documented way), one k-chunk of KK at a
// time, accumulated in a cooperative destination (execution_simdgroup,
// static KK, no transposes). RIGHT_TENSOR 1: the right operand is a tensor.
kernel void matmul_cooperative_inputs(device const TYPE_L* A [[buffer(0)]], device const TYPE_R* B [[buffer(1)]],
                                      device TYPE_D* C [[buffer(2)]], constant Shape& s [[buffer(3)]],
                                      uint2 tgid [[threadgroup_position_in_grid]],
                                      uint sg [[simdgroup_index_in_threadgroup]],
                                      uint sgs [[simdgroups_per_threadgroup]]) {
  constexpr auto desc = DESCRIPTOR;
  matmul2d<desc, execution_simdgroup> op;
  const int row0 = int(tgid.y * sgs + sg) * MM, col0 = int(tgid.x) * NN;
  auto left = op.get_left_input_cooperative_tensor<TYPE_L, TYPE_R, TYPE_D>();
  auto right = op.get_right_input_cooperative_tensor<TYPE_L, TYPE_R, TYPE_D>();
  auto ct = op.get_destination_cooperative_tensor<decltype(left), decltype(right), TYPE_D>();
  zero(ct, TYPE_D(0));
  auto tB = dense(B, s.K, s.N, s.ldb);
  for (int k0 = 0; k0 < s.K; k0 += KK) {
    for (ushort i = 0; i < left.get_capacity(); ++i) {
      if (!left.is_valid_element(i)) continue;
      auto at = left.get_multidimensional_index(i);  // (k, m) within the tile
      const int r = row0 + at[1], k = k0 + at[0];
      left[i] = r < s.M && k < s.K ? A[r * s.lda + k] : TYPE_L(0);
    }
#if RIGHT_TENSOR
    auto mB = tB.slice(col0, k0);
    op.run(left, mB, ct);
#else
    for (ushort i = 0; i < right.get_capacity(); ++i) {
      if (!right.is_valid_element(i)) continue;
      auto at = right.get_multidimensional_index(i);  // (n, k)
      const int k = k0 + at[1], c = col0 + at[0];
      right[i] = k < s.K && c < s.N ? B[k * s.ldb + c] : TYPE_R(0);
    }
    op.run(left, right, ct);
#endif
  }
  auto tC = dense(C, s.M, s.N, s.ldc);
  auto mC = tC.slice(col0, row0);
  ct.store(mC);
}
#endif

#if WITH(3)
// P = A * B (MM x K2, element type TYPE_S, a cooperative destination), then
// O = P * D (MM x NN) with P as the left input: converted in registers when
// is_compatible_as_left_input says so, else through threadgroup memory.
// used[0] says which path ran (1: the conversion). One SIMD group.
kernel void convert_left(device const TYPE_L* A [[buffer(0)]], device const TYPE_L* B [[buffer(1)]],
                         device const TYPE_L* D [[buffer(2)]], device float* O [[buffer(3)]],
                         device TYPE_S* P [[buffer(4)]], device int* used [[buffer(5)]],
                         constant Shape& s [[buffer(6)]]) {
  threadgroup TYPE_S staged[MM * K2];
  constexpr auto first = matmul2d_descriptor(MM, K2, static_cast<int>(dynamic_extent));
  constexpr auto second = matmul2d_descriptor(MM, NN, K2);
  matmul2d<first, execution_simdgroup> op1;
  matmul2d<second, execution_simdgroup> op2;
  auto mA = dense(A, s.M, s.K, s.lda);
  auto mB = dense(B, s.K, K2, s.ldb);
  auto mD = dense(D, K2, s.N, s.ldc);
  auto mO = dense(O, s.M, s.N, s.N);
  auto p = op1.get_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_S>();
  zero(p, TYPE_S(0));
  op1.run(mA, mB, p);
  p.store(dense(P, s.M, K2, K2));
  auto o = op2.get_destination_cooperative_tensor<decltype(mA), decltype(mD), float>();
  zero(o, 0.0f);
  if (op2.is_compatible_as_left_input<TYPE_S, TYPE_L, float>(p)) {
    auto left = op2.get_left_input_cooperative_tensor<TYPE_S, TYPE_L, float>(p);
    op2.run(left, mD, o);
    used[0] = 1;
  } else {
    tensor<threadgroup TYPE_S, extents<int, K2, MM>, tensor_inline> tP(staged, extents<int, K2, MM>());
    p.store(tP);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    op2.run(tP, mD, o);
    used[0] = 0;
  }
  o.store(mO);
}

// The right-hand mirror: P = A * B (MM x K2) as before, O = E * P
// (NN x K2, E: NN x MM) with P as the right input.
kernel void convert_right(device const TYPE_L* A [[buffer(0)]], device const TYPE_L* B [[buffer(1)]],
                          device const TYPE_L* E [[buffer(2)]], device float* O [[buffer(3)]],
                          device TYPE_S* P [[buffer(4)]], device int* used [[buffer(5)]],
                          constant Shape& s [[buffer(6)]]) {
  threadgroup TYPE_S staged[MM * K2];
  constexpr auto first = matmul2d_descriptor(MM, K2, static_cast<int>(dynamic_extent));
  constexpr auto second = matmul2d_descriptor(NN, K2, MM);
  matmul2d<first, execution_simdgroup> op1;
  matmul2d<second, execution_simdgroup> op2;
  auto mA = dense(A, s.M, s.K, s.lda);
  auto mB = dense(B, s.K, K2, s.ldb);
  auto mE = dense(E, s.N, s.M, s.ldc);
  auto mO = dense(O, s.N, K2, K2);
  auto p = op1.get_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_S>();
  zero(p, TYPE_S(0));
  op1.run(mA, mB, p);
  p.store(dense(P, s.M, K2, K2));
  auto o = op2.get_destination_cooperative_tensor<decltype(mE), decltype(mB), float>();
  zero(o, 0.0f);
  if (op2.is_compatible_as_right_input<TYPE_L, TYPE_S, float>(p)) {
    auto right = op2.get_right_input_cooperative_tensor<TYPE_L, TYPE_S, float>(p);
    op2.run(mE, right, o);
    used[0] = 1;
  } else {
    tensor<threadgroup TYPE_S, extents<int, K2, MM>, tensor_inline> tP(staged, extents<int, K2, MM>());
    p.store(tP);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    op2.run(mE, tP, o);
    used[0] = 0;
  }
  o.store(mO);
}
#endif

#if WITH(4)
// S = A * B (MM x NN, one tile, scope SG), stored to S, and its reductions:
// out rows: [sum | max | min | max with the default identity], MM entries
// each; out columns: [sum | max | min], NN entries each.
kernel void reductions(device const TYPE_L* A [[buffer(0)]], device const TYPE_R* B [[buffer(1)]],
                       device TYPE_D* S [[buffer(2)]], device TYPE_D* rows_out [[buffer(3)]],
                       device TYPE_D* cols_out [[buffer(4)]], constant Shape& s [[buffer(5)]]) {
  constexpr auto desc = DESCRIPTOR;
  matmul2d<desc, Scope> op;
  auto mA = dense(A, s.M, s.K, s.lda);
  auto mB = dense(B, s.K, s.N, s.ldb);
  auto ct = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  zero(ct, TYPE_D(0));
  op.run(mA, mB, ct);
  ct.store(dense(S, s.M, s.N, s.ldc));
  typedef reduction_operation_identity<TYPE_D> identity;
  auto row_sum = op.get_row_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  auto row_max = op.get_row_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  auto row_min = op.get_row_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  auto row_max0 = op.get_row_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  reduce_rows(ct, row_sum);
  reduce_rows(ct, row_max, reduction_operation::max, identity::max_identity);
  reduce_rows(ct, row_min, reduction_operation::min, identity::min_identity);
  reduce_rows(ct, row_max0, reduction_operation::max);
  auto col_sum = op.get_column_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  auto col_max = op.get_column_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  auto col_min = op.get_column_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), TYPE_D>();
  reduce_columns(ct, col_sum, reduction_operation::sum);
  reduce_columns(ct, col_max, reduction_operation::max, identity::max_identity);
  reduce_columns(ct, col_min, reduction_operation::min, identity::min_identity);
  typedef tensor<device TYPE_D, dextents<int, 1>, tensor_inline> vector_t;
  row_sum.store(vector_t(rows_out, dextents<int, 1>(s.M)));
  row_max.store(vector_t(rows_out + MM, dextents<int, 1>(s.M)));
  row_min.store(vector_t(rows_out + 2 * MM, dextents<int, 1>(s.M)));
  row_max0.store(vector_t(rows_out + 3 * MM, dextents<int, 1>(s.M)));
  col_sum.store(vector_t(cols_out, dextents<int, 1>(s.N)));
  col_max.store(vector_t(cols_out + NN, dextents<int, 1>(s.N)));
  col_min.store(vector_t(cols_out + 2 * NN, dextents<int, 1>(s.N)));
}
#endif

#if WITH(5) && (OPERAND > 1 || (SG == 1 && KK > 0 && !TRL && !TRR))
// What each thread of the scope holds of one cooperative tensor of the
// MM x NN x KK op: out[thread * (1 + 2 * capacity)] is the capacity, then
// per slot the encoded coordinate (row * 4096 + column, -1 for a slot
// is_valid_element rejects), once by index and once through iterators.
// OPERAND 3 / 4 write the reduction entry as row / column.
kernel void layout_map(device int* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  constexpr auto desc = matmul2d_descriptor(MM, NN, KK);
  matmul2d<desc, Scope> op;
  typedef tensor<device half, dextents<int, 2>, tensor_inline> operand_t;
#if OPERAND == 0
  auto ct = op.get_left_input_cooperative_tensor<half, half, float>();
#elif OPERAND == 1
  auto ct = op.get_right_input_cooperative_tensor<half, half, float>();
#elif OPERAND == 2
  auto ct = op.get_destination_cooperative_tensor<operand_t, operand_t, float>();
#elif OPERAND == 3
  auto ct = op.get_row_reduction_destination_cooperative_tensor<operand_t, operand_t, float>();
#else
  auto ct = op.get_column_reduction_destination_cooperative_tensor<operand_t, operand_t, float>();
#endif
  const int capacity = ct.get_capacity();
  device int* mine = out + tid * (1 + 2 * capacity);
  mine[0] = capacity;
  for (ushort i = 0; i < capacity; ++i) {
    int code = -1;
    if (ct.is_valid_element(i)) {
      auto at = ct.get_multidimensional_index(i);
      code = ct.get_rank() == 1 ? at[0] : at[1] * 4096 + at[0];
    }
    mine[1 + i] = code;
  }
  int slot = 0;
  for (auto it = ct.begin(); it != ct.end(); ++it, ++slot) {
    int code = -1;
    if (it.is_valid_element()) {
      auto at = it.get_multidimensional_index();
      code = ct.get_rank() == 1 ? at[0] : at[1] * 4096 + at[0];
    }
    mine[1 + capacity + slot] = code;
  }
}
#endif

#if WITH(6)
// Wrong on purpose: MLX NAX style, the cooperative tensors of a 16 x 32 x 16
// op are filled and read at the positions of the default layout
// (BaseNAXFrag::get_coord) instead of get_multidimensional_index. Right on
// the default layout, wrong once the layout is permuted.
// A: 16 x 16, B: 16 x 32, C: 16 x 32, all packed.
kernel void guessed_layout(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                           ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc =
      matmul2d_descriptor(16, 32, 16, false, false, false, matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroup> op;
  auto a = op.get_left_input_cooperative_tensor<half, half, float>();
  auto b = op.get_right_input_cooperative_tensor<half, half, float>();
  auto c = op.get_destination_cooperative_tensor<decltype(a), decltype(b), float>();
  const short qid = lane >> 2;
  const short fm = (qid & 4) | ((lane >> 1) & 3);
  const short fn = ((qid & 2) | (lane & 1)) * 4;
  for (short i = 0; i < 8; ++i) {
    const short r = fm + (i >> 2) * 8, col = fn + i % 4;
    a[i] = A[r * 16 + col];
    b[i] = B[r * 32 + col];
    b[8 + i] = B[r * 32 + 16 + col];
    c[i] = 0.0f;
    c[8 + i] = 0.0f;
  }
  op.run(a, b, c);
  for (short i = 0; i < 8; ++i) {
    const short r = fm + (i >> 2) * 8, col = fn + i % 4;
    C[r * 32 + col] = c[i];
    C[r * 32 + 16 + col] = c[8 + i];
  }
}

// ---- undefined behaviour the detectors report ------------------------------------
// 16 x 16 x 16, half inputs (A, B packed 16 x 16), float C (16 x 16, then 16 more).
#define SMALL_OPERANDS            \
  auto mA = dense(A, 16, 16, 16); \
  auto mB = dense(B, 16, 16, 16); \
  auto mC = dense(C, 16, 16, 16); \
  (void)mC
constexpr constant auto kSmall = matmul2d_descriptor(16, 16, 16);

// Half the SIMD group skips run().
kernel void partial_simdgroup(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                              ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroup> op;
  if (lane < 16) op.run(mA, mB, mC);  // MARK: partial simdgroup
}

// execution_simdgroups<2>: the second SIMD group skips run().
kernel void partial_simdgroups(device half* A [[buffer(0)]], device half* B [[buffer(1)]],
                               device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]],
                               ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroups<2>> op;
  if (sg == 0) op.run(mA, mB, mC);  // MARK: partial simdgroups
}

// execution_simdgroups<SCOPE_N> in a threadgroup of a different size.
#ifndef SCOPE_N
#define SCOPE_N 4
#endif
kernel void scope_mismatch(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                           ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroups<SCOPE_N>> op;
  op.run(mA, mB, mC);  // MARK: scope mismatch
}

// Accumulates into a cooperative destination never zeroed.
kernel void unzeroed_destination(device half* A [[buffer(0)]], device half* B [[buffer(1)]],
                                 device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]],
                                 ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroup> op;
  auto ct = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), float>();
  op.run(mA, mB, ct);  // MARK: unzeroed destination
  ct.store(mC);
}

// Stores a cooperative tensor of which only slot 0 was written.
kernel void store_unwritten(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                            ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroup> op;
  auto ct = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), float>();
  ct[0] = 1.0f;
  ct.store(mC);  // MARK: store unwritten
}

// A cooperative left input of which only the first 4 slots were written.
kernel void unwritten_input(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                            ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroup> op;
  auto left = op.get_left_input_cooperative_tensor<half, half, float>();
  for (ushort i = 0; i < 4; ++i) left[i] = half(1);
  auto ct = op.get_destination_cooperative_tensor<decltype(left), decltype(mB), float>();
  zero(ct, 0.0f);
  op.run(left, mB, ct);  // MARK: unwritten input
  ct.store(mC);
}

// A destination converted into a left input without asking
// is_compatible_as_left_input (right only while the layouts agree).
kernel void unchecked_conversion(device half* A [[buffer(0)]], device half* B [[buffer(1)]],
                                 device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]],
                                 ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroup> op;
  auto p = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), half>();
  zero(p, half(0));
  op.run(mA, mB, p);
  auto left = op.get_left_input_cooperative_tensor<half, half, float>(p);  // MARK: unchecked conversion
  auto ct = op.get_destination_cooperative_tensor<decltype(left), decltype(mB), float>();
  zero(ct, 0.0f);
  op.run(left, mB, ct);
  ct.store(mC);
}

// Row reduction of a destination never written.
kernel void reduce_unwritten(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                             ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  matmul2d<kSmall, execution_simdgroup> op;
  auto ct = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), float>();
  auto rows = op.get_row_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), float>();
  const float lowest = reduction_operation_identity<float>::max_identity;
  reduce_rows(ct, rows, reduction_operation::max, lowest);  // MARK: reduce unwritten
  rows.store(tensor<device float, dextents<int, 1>, tensor_inline>(C + 256, dextents<int, 1>(16)));
}

// All of the above done right: no finding on any layout. C = (A B) B (16 x
// 16), then C's row maxima at C + 256.
kernel void all_right(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                      ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]]) {
  SMALL_OPERANDS;
  threadgroup half staged[16 * 16];
  matmul2d<kSmall, execution_simdgroup> op;
  auto p = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), half>();
  zero(p, half(0));
  op.run(mA, mB, p);
  auto ct = op.get_destination_cooperative_tensor<decltype(mA), decltype(mB), float>();
  zero(ct, 0.0f);
  if (op.is_compatible_as_left_input<half, half, float>(p)) {
    auto left = op.get_left_input_cooperative_tensor<half, half, float>(p);
    op.run(left, mB, ct);
  } else {
    tensor<threadgroup half, extents<int, 16, 16>, tensor_inline> tP(staged, extents<int, 16, 16>());
    p.store(tP);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    op.run(tP, mB, ct);
  }
  ct.store(mC);
  auto rows = op.get_row_reduction_destination_cooperative_tensor<decltype(mA), decltype(mB), float>();
  reduce_rows(ct, rows, reduction_operation::max, reduction_operation_identity<float>::max_identity);
  rows.store(tensor<device float, dextents<int, 1>, tensor_inline>(C + 256, dextents<int, 1>(16)));
}
#endif  // WITH(6)

#if WITH(7)
// execution_thread over tensors in thread and constant memory: thread t
// computes C_t = 1 + A_t B (multiply_accumulate into a thread array holding
// ones), A_t the t-th 4 x 8 block of A (device), B 8 x 4 (constant), and
// copies C_t out.
kernel void thread_memory(device half* A [[buffer(0)]], constant half* B [[buffer(1)]], device float* C [[buffer(2)]],
                          uint t [[thread_position_in_grid]]) {
  constexpr auto desc =
      matmul2d_descriptor(4, 4, 8, false, false, false, matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_thread> op;
  float block[16];
  for (int i = 0; i < 16; ++i) block[i] = 1.0f;
  auto mA = tensor(A + t * 32, extents<int, 8, 4>());
  auto mB = tensor(B, extents<int, 4, 8>());
  auto mC = tensor(block, extents<int, 4, 4>());
  op.run(mA, mB, mC);
  for (int i = 0; i < 16; ++i) C[t * 16 + i] = block[i];
}
#endif  // WITH(7)
