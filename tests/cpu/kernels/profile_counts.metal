// Kernels whose profile counts are known exactly (tests/cpu/profile_counts_test.cpp).
#include <metal_stdlib>
using namespace metal;

// One simdgroup: `n` (a runtime value) rounds of two simdgroup_loads from
// device memory and one half x half -> float MMA; one store at the end.
// Per simdgroup: n MMAs, 2n loads of 128 bytes, 1 store of 256 bytes.
kernel void mma_loop(device const half* a [[buffer(0)]], device float* c [[buffer(1)]],
                     constant uint& n [[buffer(2)]]) {
  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint i = 0; i < n; ++i) {
    simdgroup_matrix<half, 8, 8> x, y;
    simdgroup_load(x, a + 64 * i, 8);
    simdgroup_load(y, a + 64 * i, 8, ulong2(0, 0), true);
    simdgroup_multiply_accumulate(acc, x, y, acc);
  }
  simdgroup_store(acc, c, 8);
}

// Two simdgroups. Lanes below 16 take exp2, the others log2: each simdgroup
// pays for both. Lane l then runs l rounds of an fma: a simdgroup pays for
// its busiest lane, 31 rounds. Each thread reads one float4 and writes one float.
kernel void divergent(device const float4* in [[buffer(0)]], device float* out [[buffer(1)]],
                      uint tid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float4 v = in[tid];
  float x = v.x;
  if (lane < 16) {
    x = exp2(x);
  } else {
    x = log2(x);
  }
  float acc = v.y;
  for (uint i = 0; i < lane; ++i) acc = fma(acc, v.z, v.w);
  out[tid] = x + acc;
}

// One threadgroup of 64 threads: each writes one float to threadgroup
// memory, one barrier, each reads its neighbour's and reduces over its
// simdgroup with one simd_sum.
kernel void shared_sum(device float* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float scratch[64];
  scratch[tid] = float(tid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float mine = scratch[(tid + 1) % 64];
  out[tid] = simd_sum(mine);
}

// Threadgroup x runs x rounds of a multiply (work linear in x, as in causal
// attention): for sampling tests.
kernel void ramp(device float* out [[buffer(0)]], uint2 group [[threadgroup_position_in_grid]],
                 uint lane [[thread_index_in_simdgroup]]) {
  float acc = float(lane);
  for (uint i = 0; i < group.x; ++i) acc = acc * 1.0001f;
  if (lane == 0) out[group.y * 64 + group.x] = acc;
}

// One simdgroup. Thread t reads four halves, four bfloats and four floats
// starting at element 4t + 1 (element-aligned, not vector-aligned: legal for
// MSL's packed vector types) as one packed vector each, widens them and writes
// them as packed floats at element 12t + 1 of `out`. Per simdgroup: three
// device loads (8, 8 and 16 bytes per lane) and three stores of 16 bytes.
kernel void packed_copy(device const half* h [[buffer(0)]], device const bfloat* b [[buffer(1)]],
                        device const float* f [[buffer(2)]], device float* out [[buffer(3)]],
                        uint t [[thread_position_in_grid]]) {
  const half4 x = *reinterpret_cast<const device packed_half4*>(h + 4 * t + 1);
  const bfloat4 y = *reinterpret_cast<const device packed_bfloat4*>(b + 4 * t + 1);
  const float4 z = *reinterpret_cast<const device packed_float4*>(f + 4 * t + 1);
  device packed_float4* o = reinterpret_cast<device packed_float4*>(out + 12 * t + 1);
  o[0] = float4(x);
  o[1] = float4(y);
  o[2] = z;
}

// Integer division: by a constant (20, and 16) it is a multiply-high and
// shifts on any compiler's output, by a runtime value a divide sequence.
kernel void divide_by_constant(device const uint* in [[buffer(0)]], device uint* out [[buffer(1)]],
                               constant uint& n [[buffer(2)]], uint t [[thread_position_in_grid]]) {
  const uint x = in[t];
  out[4 * t] = x / 20u;
  out[4 * t + 1] = x % 20u;
  out[4 * t + 2] = x / 16u;
  out[4 * t + 3] = x / n;
}

// One simdgroup. Thread t reads four adjacent halves and eight adjacent
// floats as scalars, then two halves 64 elements apart. A GPU compiler merges
// adjacent scalar accesses into vector memory instructions of up to 16 bytes
// (docs/profile.md): per simdgroup 1 + 2 + 2 device loads and one store.
kernel void adjacent_scalars(device const half* h [[buffer(0)]], device const float* f [[buffer(1)]],
                             device float* out [[buffer(2)]], uint t [[thread_position_in_grid]]) {
  const float halves = float(h[4 * t]) + float(h[4 * t + 1]) + float(h[4 * t + 2]) + float(h[4 * t + 3]);
  const float floats = f[8 * t] + f[8 * t + 1] + f[8 * t + 2] + f[8 * t + 3] + f[8 * t + 4] + f[8 * t + 5] +
                       f[8 * t + 6] + f[8 * t + 7];
  const float apart = float(h[t + 128]) * float(h[t + 192]);
  out[t] = halves + floats + apart;
}

// Every thread of a threadgroup reads the same 32 floats (one 128-byte line)
// and its own float: requested bytes 64 x 33 x 4, of which the distinct lines
// are the shared one and the two lines of the 64 own floats.
kernel void shared_reads(device const float* table [[buffer(0)]], device const float* own [[buffer(1)]],
                         device float* out [[buffer(2)]], uint t [[thread_position_in_threadgroup]],
                         uint g [[threadgroup_position_in_grid]]) {
  float sum = own[g * 64 + t];
  for (uint i = 0; i < 32; ++i) sum += table[i];
  out[g * 64 + t] = sum;
}

// One simdgroup copies a 16 x 32 half tile to threadgroup memory with a
// simdgroup async copy (<metal_simdgroup_future>) and back to `out`, with
// nothing else: 64 pieces of 16 bytes each way, 2 per lane.
#include <metal_simdgroup_future>
kernel void async_copy_tile(device const half* in [[buffer(0)]], device half* out [[buffer(1)]]) {
  threadgroup half tile[16 * 32];
  __metal_simdgroup_event_t e = __metal_simdgroup_async_copy_2d(sizeof(half), alignof(half), tile, 32, 1,
                                                                ulong2(32, 16), in, 32, 1, ulong2(32, 16),
                                                                long2(0), 0);
  __metal_wait_simdgroup_events(1, &e);
  e = __metal_simdgroup_async_copy_2d(sizeof(half), alignof(half), out, 32, 1, ulong2(32, 16), tile, 32, 1,
                                      ulong2(32, 16), long2(0), 0);
  __metal_wait_simdgroup_events(1, &e);
}
