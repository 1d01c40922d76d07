// Which elements of an 8x8 simdgroup_matrix each lane holds (Apple's layout:
// lane l holds row 4*(l/16) + (l/2)%4, columns c and c+1 with
// c = 4*((l/8)%2) + 2*(l%2)).
#include <metal_stdlib>
using namespace metal;

// Loads the 8x8 matrix `in` (row-major) and writes lane l's two
// thread_elements() to out[2l] and out[2l + 1]. One simdgroup.
kernel void elements_of_loaded(device const float* in [[buffer(0)]],
                               device float* out [[buffer(1)]],
                               ushort lane [[thread_index_in_simdgroup]]) {
  simdgroup_matrix<float, 8, 8> m;
  simdgroup_load(m, in, 8);
  out[2 * lane] = m.thread_elements()[0];
  out[2 * lane + 1] = m.thread_elements()[1];
}

// The other direction: lane l sets its elements to 1000 + 2l and 1000 + 2l + 1
// and the matrix is stored row-major to out.
kernel void store_of_elements(device float* out [[buffer(0)]],
                              ushort lane [[thread_index_in_simdgroup]]) {
  simdgroup_matrix<float, 8, 8> m;
  m.thread_elements()[0] = 1000.0f + 2 * lane;
  m.thread_elements()[1] = 1000.0f + 2 * lane + 1;
  simdgroup_store(m, out, 8);
}

// The same for half inputs, through a threadgroup copy of the matrix.
kernel void elements_of_loaded_half(device const half* in [[buffer(0)]],
                                    device half* out [[buffer(1)]],
                                    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup half staged[64];
  staged[lane] = in[lane];
  staged[lane + 32] = in[lane + 32];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_matrix<half, 8, 8> m;
  simdgroup_load(m, staged, 8);
  half2 mine = m.thread_elements();
  out[2 * lane] = mine.x;
  out[2 * lane + 1] = mine.y;
}
