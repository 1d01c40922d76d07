// SIMD-group collectives on ELEM (-D ELEM=float | int). Every thread whose
// active[gid] is 0 returns at once; the others write SLOTS results to
// out[gid * SLOTS ...]. Results that Metal leaves undefined (reading a lane
// that does not exist or has returned) are ignored by the test.
#include <metal_stdlib>
using namespace metal;

#ifndef ELEM
#define ELEM float
#endif

#define SLOTS 12

kernel void simd_ops(device const ELEM* in [[buffer(0)]],
                     device ELEM* out [[buffer(1)]],
                     device const uint* active [[buffer(2)]],
                     constant ushort& broadcast_lane [[buffer(3)]],
                     uint gid [[thread_position_in_grid]],
                     ushort lane [[thread_index_in_simdgroup]]) {
  if (active[gid] == 0) {
    return;
  }
  const ELEM x = in[gid];
  device ELEM* o = out + gid * SLOTS;
  o[0] = simd_sum(x);
  o[1] = simd_max(x);
  o[2] = simd_min(x);
  o[3] = simd_shuffle(x, ushort((lane * 7 + 3) % 32));
  o[4] = simd_shuffle_xor(x, ushort(1));
  o[5] = simd_shuffle_xor(x, ushort(8));
  o[6] = simd_shuffle_xor(x, ushort(16));
  o[7] = simd_shuffle_down(x, ushort(3));
  o[8] = simd_shuffle_up(x, ushort(5));
  o[9] = simd_broadcast(x, broadcast_lane);
  o[10] = simd_prefix_exclusive_sum(x);
  o[11] = simd_shuffle_xor(simd_shuffle_xor(x, ushort(1)), ushort(8));  // the 8x8-tile row reduction pattern
}

// The row reduction of an 8x8 simdgroup_matrix tile as attention kernels do
// it: each lane holds two elements of one row; xor 1 and xor 8 visit the four
// lanes that share the row (DESIGN.md section 7).
kernel void tile_row_max(device const float* tile [[buffer(0)]],
                         device float* row_max [[buffer(1)]],
                         ushort lane [[thread_index_in_simdgroup]]) {
  simdgroup_matrix<float, 8, 8> m;
  simdgroup_load(m, tile, 8);
  float2 e = m.thread_elements();
  float v = max(e.x, e.y);
  v = max(v, simd_shuffle_xor(v, ushort(1)));
  v = max(v, simd_shuffle_xor(v, ushort(8)));
  row_max[lane] = v;
}

// Collectives inside lane-divergent branches: in Metal each one runs over the
// lanes active in its branch (lanes 0..15 sum v, lanes 16..31 sum 2v).
kernel void divergent_sums(device float* x [[buffer(0)]],
                           uint lane [[thread_index_in_simdgroup]],
                           uint gid [[thread_position_in_grid]]) {
  const float v = x[gid];
  float s;
  if (lane < 16) {
    s = simd_sum(v);
  } else {
    s = simd_sum(2.0f * v);
  }
  x[gid] = s;
}
