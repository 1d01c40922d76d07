// A simdgroup's lanes communicating through threadgroup memory without a
// barrier, relying on the lanes running in lockstep: ggml's
// kernel_flash_attn_ext_vec with NE = 1 (its dk128 instantiation, at
// daa2d466 and at 2026-08 HEAD) has every lane read the P values in ss[]
// in the last step of its key loop, and then lane 0 write the simdgroup's
// S and M into ss[0] and ss[1] with no barrier between.
//
// On Apple GPUs a simdgroup's lanes execute together, so every lane reads
// before lane 0 writes. By Metal's memory model it is a data race (only a
// simdgroup_barrier or threadgroup_barrier orders threadgroup memory between
// threads), and the cpu backend runs each lane to its next synchronization
// point before the next lane starts: lane 0 writes before lanes 1..31 read,
// and the lanes after it read its value. The race detector must report it
// (the results differ from the GPU's); the twin puts a simdgroup_barrier
// between, which orders the lanes' accesses: it must run clean (every lane
// read the word in the simdgroup's previous interval).
#include <metal_stdlib>
using namespace metal;

kernel void read_then_leader_writes(device const float* x [[buffer(0)]],
                                    device float* y [[buffer(1)]],
                                    uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float scratch[32];
  scratch[lane] = x[lane];
  simdgroup_barrier(mem_flags::mem_threadgroup);
  float sum = 0.0f;
  for (int j = 0; j < 32; ++j) sum += scratch[j];  // MARK: read
  if (lane == 0) scratch[0] = -1000.0f;  // MARK: write
  y[lane] = sum;
}

kernel void read_barrier_then_leader_writes(device const float* x [[buffer(0)]],
                                            device float* y [[buffer(1)]],
                                            uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float scratch[32];
  scratch[lane] = x[lane];
  simdgroup_barrier(mem_flags::mem_threadgroup);
  float sum = 0.0f;
  for (int j = 0; j < 32; ++j) sum += scratch[j];
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (lane == 0) scratch[0] = -1000.0f;
  y[lane] = sum;
}

// Each lane writes its word, then reads its neighbour's with no barrier
// between. On a GPU the simdgroup's lanes execute the store together, then
// the load: every lane reads the neighbour's new word. Under the cpu
// backend's lockstep mode the same holds; by default lane 0 would read
// before lane 1 has written.
kernel void write_then_read_neighbour(device const float* x [[buffer(0)]],
                                      device float* y [[buffer(1)]],
                                      uint lane [[thread_index_in_simdgroup]],
                                      uint simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup float scratch[64];
  scratch[32 * simd + lane] = x[32 * simd + lane];  // MARK: neighbour write
  y[32 * simd + lane] = scratch[32 * simd + (lane + 1) % 32];  // MARK: neighbour read
}
