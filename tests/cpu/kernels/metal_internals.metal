// Undocumented Metal that metal-flash-attention v1 (e69ba95) is built on,
// written for these tests in its style: the simdgroup asynchronous copies of
// <metal_simdgroup_future>, the 8x8 multiply builtin on vec<T, 64>,
// vectors direct-initialized (`ushort2 origin(x, y);`) and a
// visible_function_table [[buffer]] behind a false function constant.
#include <metal_stdlib>
#if defined(__HAVE_SIMDGROUP_FUTURE__)
#include <metal_simdgroup_future>
#endif
using namespace metal;

#if !defined(__HAVE_SIMDGROUP_MATRIX__) || !defined(__HAVE_SIMDGROUP_FUTURE__)
#error "Apple's compiler predefines __HAVE_SIMDGROUP_MATRIX__ and __HAVE_SIMDGROUP_FUTURE__"
#endif

constant bool use_table [[function_constant(0)]];
typedef visible_function_table<float(float)> activation_table;

// One simdgroup copies a src tile (params: src columns, src rows, dst
// columns, dst rows, clamp mode) from a 10-column device matrix into a
// threadgroup tile with 12 elements per row, then back to `out` (12 x 8)
// after the wait; a second copy moves 5 elements 1-D.
kernel void async_copy_2d(device const float* src [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint* params [[buffer(2)]], device float* out_1d [[buffer(3)]],
                          activation_table table [[buffer(4), function_constant(use_table)]],
                          threadgroup float* tile [[threadgroup(0)]], ushort lane [[thread_index_in_simdgroup]]) {
  for (uint i = lane; i < 12 * 8; i += 32) tile[i] = -1.0f;  // what the copy leaves shows
  simdgroup_barrier(mem_flags::mem_threadgroup);
  ushort2 src_tile(params[0], params[1]);
  ushort2 dst_tile(params[2], params[3]);
  __metal_simdgroup_event_t events[2];
  events[0] = __metal_simdgroup_async_copy_2d(sizeof(float), alignof(float), tile, 12, 1, ulong2(dst_tile), src, 10,
                                              1, ulong2(src_tile), long2(0), int(params[4]));
  events[1] = __metal_simdgroup_async_copy_1d(sizeof(float), alignof(float), tile + 12 * 7 + 6, src + 95, 5);
  __metal_wait_simdgroup_events(2, events);
  __metal_simdgroup_event_t back = __metal_simdgroup_async_copy_2d(
      sizeof(float), alignof(float), out, 12, 1, ulong2(12, 8), tile, 12, 1, ulong2(12, 8), long2(0), 0);
  __metal_wait_simdgroup_events(1, &back);
  if (use_table && lane == 0) out_1d[0] = table[0](out_1d[0]);
}

// d = a * b + c for one 8x8 tile per simdgroup, half x half -> float through
// the builtin, fragments laid out as metal-flash-attention's storage does.
kernel void builtin_multiply(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                             device const float* c [[buffer(2)]], device float* d [[buffer(3)]],
                             ushort lane [[thread_index_in_simdgroup]]) {
  ushort row = 4 * (lane / 16) + (lane / 2) % 4, col = 4 * ((lane / 8) % 2) + 2 * (lane % 2);
  vec<half, 64> va, vb;
  vec<float, 64> vc;
  va[0] = a[row * 8 + col], va[1] = a[row * 8 + col + 1];
  vb[0] = b[row * 8 + col], vb[1] = b[row * 8 + col + 1];
  vc[0] = c[row * 8 + col], vc[1] = c[row * 8 + col + 1];
  vec<float, 64> vd = __metal_simdgroup_matrix_8x8_multiply_accumulate(va, vb, vc, vec<float, 64>());
  d[row * 8 + col] = vd[0];
  d[row * 8 + col + 1] = vd[1];
}

// Each lane reads an element of the tile another lane's share of the copy
// wrote: ordered by the wait, a race without it (MFAGEN_TEST_NO_WAIT).
kernel void async_copy_then_read(device const float* src [[buffer(0)]], device float* out [[buffer(1)]],
                                 threadgroup float* tile [[threadgroup(0)]],
                                 ushort lane [[thread_index_in_simdgroup]]) {
  __metal_simdgroup_event_t e = __metal_simdgroup_async_copy_1d(sizeof(float), alignof(float), tile, src, 256);
#if !defined(MFAGEN_TEST_NO_WAIT)
  __metal_wait_simdgroup_events(1, &e);
#endif
  out[lane] = tile[(uint(lane) * 8 + 100) % 256];
}
