// One sum per threadgroup through a [[threadgroup(0)]] scratch buffer whose
// size comes from --threadgroup-bytes; a tree reduction with barriers.
#include <metal_stdlib>
using namespace metal;

kernel void block_sum(device const float* in [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      threadgroup float* scratch [[threadgroup(0)]],
                      uint tid [[thread_position_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]],
                      uint size [[threads_per_threadgroup]]) {
  scratch[tid] = in[group * size + tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = size / 2; stride > 0; stride /= 2) {
    if (tid < stride) scratch[tid] += scratch[tid + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) out[group] = scratch[0];
}
