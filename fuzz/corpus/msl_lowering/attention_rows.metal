// A bundled, hand-written attention forward kernel: one thread per query row,
// K/V streamed through threadgroup memory in tiles, base-2 online softmax in
// float32. It is the built-in example the cpu backend runs until the
// generator's kernels replace it (README, first command).
#include <metal_stdlib>
using namespace metal;

struct AttentionParams {
  uint seq_q;
  uint seq_k;
  uint heads;
  float scale_log2;  // scale * log2(e): exp(x * scale) == exp2(x * scale_log2)
};

constant constexpr uint kHeadDim = 64;
constant constexpr uint kBlockK = 32;

kernel void attention_rows(device const float* q [[buffer(0)]],
                           device const float* k [[buffer(1)]],
                           device const float* v [[buffer(2)]],
                           device float* out [[buffer(3)]],
                           constant AttentionParams& params [[buffer(4)]],
                           uint3 group [[threadgroup_position_in_grid]],
                           uint3 local [[thread_position_in_threadgroup]],
                           uint3 group_size [[threads_per_threadgroup]]) {
  threadgroup float k_tile[kBlockK * kHeadDim];
  threadgroup float v_tile[kBlockK * kHeadDim];

  const uint head = group.y;
  const uint row = group.x * group_size.x + local.x;
  const bool active = row < params.seq_q;
  device const float* q_row = q + (head * params.seq_q + min(row, params.seq_q - 1)) * kHeadDim;
  device const float* k_head = k + head * params.seq_k * kHeadDim;
  device const float* v_head = v + head * params.seq_k * kHeadDim;

  float acc[kHeadDim];
  for (uint d = 0; d < kHeadDim; ++d) acc[d] = 0.0f;
  float running_max = -INFINITY;
  float running_sum = 0.0f;

  for (uint block = 0; block < params.seq_k; block += kBlockK) {
    // Every thread of the threadgroup helps load the tile, active or not.
    for (uint i = local.x; i < kBlockK * kHeadDim; i += group_size.x) {
      uint key = block + i / kHeadDim;
      k_tile[i] = key < params.seq_k ? k_head[block * kHeadDim + i] : 0.0f;
      v_tile[i] = key < params.seq_k ? v_head[block * kHeadDim + i] : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint keys = min(kBlockK, params.seq_k - block);
    for (uint j = 0; j < keys && active; ++j) {
      float score = 0.0f;
      for (uint d = 0; d < kHeadDim; ++d) score += q_row[d] * k_tile[j * kHeadDim + d];
      score *= params.scale_log2;
      const float new_max = max(running_max, score);
      const float correction = exp2(running_max - new_max);
      const float p = exp2(score - new_max);
      running_sum = running_sum * correction + p;
      for (uint d = 0; d < kHeadDim; ++d) acc[d] = acc[d] * correction + p * v_tile[j * kHeadDim + d];
      running_max = new_max;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (!active) return;
  device float* out_row = out + (head * params.seq_q + row) * kHeadDim;
  const float inverse = running_sum > 0.0f ? 1.0f / running_sum : 0.0f;
  for (uint d = 0; d < kHeadDim; ++d) out_row[d] = acc[d] * inverse;
}
