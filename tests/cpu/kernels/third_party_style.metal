// Constructs found in MLX's and llama.cpp's kernels, written for mfagen's
// tests (none of their code): each kernel computes something the test
// checks against plain C++.
#include <metal_stdlib>
#include "third_party_style/fragments.h"
using namespace metal;

constant bool has_bias [[function_constant(0)]];
constant float kTable[4] = {1.0f, 2.0f, 4.0f, 8.0f};
constant style::Complex kHalf(0.5f);

// llama.cpp passes `constant` tables to `constant T*` parameters.
METAL_FUNC float table_sum(int n, constant float* table) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += table[i];
  return s;
}
// `thread T*` deduces T from a local's address (MLX's atomic helpers).
template <typename T>
METAL_FUNC void accumulate(device T* total, thread T* partial, T extra) {
  *total += *partial + extra;
}
// Temporaries bind to `thread const T&` (MLX's gemm loop passes expressions).
METAL_FUNC float scaled(thread const short& factor, float x) { return factor * x; }
// Dequantizer-style function passed as a template argument (llama.cpp).
METAL_FUNC void add_twice(thread float& acc, float x) { acc += 2.0f * x; }
template <void (*op)(thread float&, float)>
METAL_FUNC float apply(float x) {
  float acc = 1.0f;
  op(acc, x);
  return acc;
}

// out[0..]: scalar idioms; one thread.
kernel void scalar_idioms(device const bfloat* b [[buffer(0)]],
                          device float* out [[buffer(1)]],
                          device const float* bias [[buffer(2), function_constant(has_bias)]]) {
  float s = 0.5f;
  s += b[0];  // float op= bfloat lvalue in device memory
  s *= b[1];
  out[0] = s;
  out[1] = table_sum(4, kTable);
  float partial = 3.0f;
  accumulate(out + 2, &partial, 1.0f);
  out[3] = scaled(short(2 + 1), 1.5f);
  out[4] = apply<add_twice>(5.0f);
  float4 acc = {1.0f}, none = {};
  out[5] = acc.x + acc.y + acc.z + acc.w + none.w;
  out[6] = has_bias ? bias[0] : -1.0f;
  constexpr auto seven = style::Int<3>{} + style::Int<4>{};
  out[7] = decltype(seven)::value;
  out[8] = is_accumulator<float> && !is_accumulator<half> ? 1.0f : 0.0f;
  style::Complex two(2.0f);
  out[9] = kHalf.re + two.re;
  half2 h = half2(1.5h, 2.25h);
  float2 f = float2(4.0f, 8.0f);
  out[10] = style::pair_sum(h) + style::pair_sum(f);  // A deduced as half, then float
}

// An 8x8 float matmul, one simdgroup, through Fragment::mma; MLX-style
// templated kernel with an attribute list and a host_name instantiation.
template <typename T>
[[kernel, max_total_threads_per_threadgroup(32)]] void fragment_matmul(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device T* d [[buffer(2)]],
    uint lane [[thread_index_in_simdgroup]]) {
  style::Tile<T> tile;
  const uint row = 4 * (lane / 16) + (lane / 2) % 4, col = 4 * ((lane / 8) % 2) + 2 * (lane % 2);
  for (int k = 0; k < 2; ++k) {
    tile.a.at()[k] = a[row * 8 + col + k];
    tile.b.at()[k] = b[row * 8 + col + k];
  }
  style::Fragment<T>::mma(tile.d.at(), tile.a.at(), tile.b.at());
  d[row * 8 + col] = tile.d.at()[0];
  d[row * 8 + col + 1] = tile.d.at()[1];
}
#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
instantiate_kernel("fragment_matmul_float", fragment_matmul, float)

// llama.cpp-style: float4x4 blocks in device memory, converted through
// half4x4, times a vector; instantiated through a typedef of decltype.
template <typename M>
kernel void matrix_blocks(device const float4x4* blocks [[buffer(0)]],
                          device const float4* x [[buffer(1)]],
                          device float4* y [[buffer(2)]],
                          uint i [[thread_position_in_grid]]) {
  M m = (M)blocks[i];
  float4x4 back = (float4x4)m;
  back[3][3] += 1.0f;  // column 3, row 3
  y[i] = back * x[i];
}
typedef decltype(matrix_blocks<half4x4>) matrix_blocks_t;
template [[host_name("matrix_blocks_half")]] kernel matrix_blocks_t matrix_blocks<half4x4>;

// llama.cpp-style template over a vector type: `(T4)x` and `T4(x)` convert
// values (clang alone would bit-cast or reject them), and `float * half4`
// converts the scalar to the element type, as Metal does.
template <typename T4>
kernel void dependent_vectors(device const float4* src [[buffer(0)]],
                              device float4* dst [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
  T4 v = (T4)src[i];
  T4 w = T4(src[i] * 2.0f);
  float slope = 0.5f;
  dst[i] = float4(slope * v + w);
}
typedef decltype(dependent_vectors<half4>) dependent_vectors_t;
template [[host_name("dependent_vectors_half4")]] kernel dependent_vectors_t dependent_vectors<half4>;

// llama.cpp's mul_mm stores float4 rows at element-aligned offsets (row
// stride 70 floats); the cpu backend must run it without faulting.
kernel void unaligned_rows(device const float* src [[buffer(0)]],
                           device float* dst [[buffer(1)]],
                           constant int& row_stride [[buffer(2)]],
                           uint row [[thread_position_in_grid]]) {
  device const float4* from = (device const float4*)(src + row * row_stride);
  device float4* to = (device float4*)(dst + row * row_stride);
  to[0] = from[0] * 2.0f;
}
