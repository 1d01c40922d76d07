// C = A * B (or A * B^T) with simdgroup_matrix 8x8 tiles, inputs of type ELEM
// (-D ELEM=half | bfloat | float), accumulated in float.
//   A: M x K row-major,  B: K x N row-major (matmul_nn, matmul_mixed, matmul_tiled)
//                        or N x K row-major (matmul_nt, B transposed on load)
//   C: M x N row-major float
// M, N and K are multiples of 8.
#include <metal_stdlib>
using namespace metal;

#ifndef ELEM
#define ELEM float
#endif

struct Dims {
  uint M;
  uint N;
  uint K;
};

// Inputs are widened to float element by element (each lane owns two
// elements of a tile, the same two in every simdgroup_matrix), as MLX does.
template <typename U>
inline simdgroup_matrix<float, 8, 8> widen(simdgroup_matrix<U, 8, 8> m) {
  simdgroup_matrix<float, 8, 8> out;
  out.thread_elements()[0] = float(m.thread_elements()[0]);
  out.thread_elements()[1] = float(m.thread_elements()[1]);
  return out;
}
inline simdgroup_matrix<float, 8, 8> widen(simdgroup_matrix<float, 8, 8> m) { return m; }

// One simdgroup per threadgroup computes the 8x8 tile of C at
// (8 * tgid.y, 8 * tgid.x). A is addressed with a matrix origin, B with a
// pointer offset.
kernel void matmul_nn(device const ELEM* A [[buffer(0)]],
                      device const ELEM* B [[buffer(1)]],
                      device float* C [[buffer(2)]],
                      constant Dims& dims [[buffer(3)]],
                      uint2 tgid [[threadgroup_position_in_grid]]) {
  const uint row = tgid.y * 8;
  const uint col = tgid.x * 8;
  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < dims.K; k += 8) {
    simdgroup_matrix<ELEM, 8, 8> a;
    simdgroup_matrix<ELEM, 8, 8> b;
    simdgroup_load(a, A, dims.K, ulong2(k, row));
    simdgroup_load(b, B + k * dims.N + col, dims.N);
    simdgroup_multiply_accumulate(acc, widen(a), widen(b), acc);
  }
  simdgroup_store(acc, C, dims.N, ulong2(col, row));
}

// The same with the inputs multiplied directly: simdgroup_multiply_accumulate
// with ELEM operands and a float accumulator (mixed types, as
// metal-flash-attention does).
kernel void matmul_mixed(device const ELEM* A [[buffer(0)]],
                         device const ELEM* B [[buffer(1)]],
                         device float* C [[buffer(2)]],
                         constant Dims& dims [[buffer(3)]],
                         uint2 tgid [[threadgroup_position_in_grid]]) {
  const uint row = tgid.y * 8;
  const uint col = tgid.x * 8;
  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < dims.K; k += 8) {
    simdgroup_matrix<ELEM, 8, 8> a;
    simdgroup_matrix<ELEM, 8, 8> b;
    simdgroup_load(a, A + row * dims.K + k, dims.K);
    simdgroup_load(b, B + k * dims.N + col, dims.N);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, C + row * dims.N + col, dims.N);
}

// C = A * B^T with B stored N x K: the 8x8 tile of B^T at (k, col) is the
// transpose of the tile of B at (col, k).
kernel void matmul_nt(device const ELEM* A [[buffer(0)]],
                      device const ELEM* B [[buffer(1)]],
                      device float* C [[buffer(2)]],
                      constant Dims& dims [[buffer(3)]],
                      uint2 tgid [[threadgroup_position_in_grid]]) {
  const uint row = tgid.y * 8;
  const uint col = tgid.x * 8;
  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < dims.K; k += 8) {
    simdgroup_matrix<ELEM, 8, 8> a;
    simdgroup_matrix<ELEM, 8, 8> bt;
    simdgroup_load(a, A + row * dims.K + k, dims.K);
    simdgroup_load(bt, B + col * dims.K + k, dims.K, ulong2(0, 0), true);
    simdgroup_multiply_accumulate(acc, widen(a), widen(bt), acc);
  }
  simdgroup_store(acc, C + row * dims.N + col, dims.N);
}

// Four simdgroups (128 threads) compute a 16x16 tile of C. Each step of 8
// along K stages a 16x8 tile of A and an 8x16 tile of B in threadgroup memory
// (one element of each per thread, zero outside the matrices), then every
// simdgroup multiplies its 8x8 quarter from there. Tiles that hang over the
// edge of C (M or N = 8) are computed on zeros and not stored.
constant constexpr uint TILE = 16;

kernel void matmul_tiled(device const ELEM* A [[buffer(0)]],
                         device const ELEM* B [[buffer(1)]],
                         device float* C [[buffer(2)]],
                         constant Dims& dims [[buffer(3)]],
                         uint2 tgid [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint sgid [[simdgroup_index_in_threadgroup]]) {
  threadgroup ELEM a_tile[TILE * 8];
  threadgroup ELEM b_tile[8 * TILE];

  const uint tile_row = tgid.y * TILE;
  const uint tile_col = tgid.x * TILE;
  const uint sg_row = (sgid / 2) * 8;  // this simdgroup's quarter of the tile
  const uint sg_col = (sgid % 2) * 8;

  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < dims.K; k += 8) {
    // Thread tid stages A(tile_row + tid / 8, k + tid % 8) and B(k + tid / 16, tile_col + tid % 16).
    const uint ar = tile_row + tid / 8, ac = k + tid % 8;
    const uint br = k + tid / TILE, bc = tile_col + tid % TILE;
    ELEM a_value = ELEM(0);
    ELEM b_value = ELEM(0);
    if (ar < dims.M) {
      a_value = A[ar * dims.K + ac];
    }
    if (bc < dims.N) {
      b_value = B[br * dims.N + bc];
    }
    a_tile[tid] = a_value;
    b_tile[tid] = b_value;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    simdgroup_matrix<ELEM, 8, 8> a;
    simdgroup_matrix<ELEM, 8, 8> b;
    simdgroup_load(a, a_tile + sg_row * 8, 8);
    simdgroup_load(b, b_tile, TILE, ulong2(sg_col, 0));
    simdgroup_multiply_accumulate(acc, widen(a), widen(b), acc);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  const uint row = tile_row + sg_row, col = tile_col + sg_col;
  if (row < dims.M && col < dims.N) simdgroup_store(acc, C + row * dims.N + col, dims.N);
}
