// One attention problem as the tests describe it: shapes, options and the
// input tensors, laid out BHSD and contiguous (DESIGN.md section 3).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "dropout.h"

namespace mfagen::reference {

enum class CausalMode { none, top_left, bottom_right };

struct AttentionProblem {
  uint64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_k = 1, head_dim = 8, head_dim_v = 8;
  CausalMode causal = CausalMode::none;
  double scale = 0;  // 0: 1/sqrt(head_dim)

  // Optional features, all off by default.
  std::optional<std::pair<int64_t, int64_t>> window;  // (left, right), -1 = unbounded side
  double softcap = 0;                                 // > 0: s = softcap * tanh(z / softcap)
  std::vector<double> alibi_slopes;                   // empty, or heads_q values, or batch*heads_q values (b-major)
  // Masks: empty, or a tensor of shape mask_shape (4 dims, each 1 or the full
  // size of (B, Hq, Sq, Sk)), broadcast along the dims of size 1.
  std::vector<uint8_t> bool_mask;      // nonzero = visible
  std::vector<double> additive_mask;   // added to s; -inf hides the key
  std::array<uint64_t, 4> mask_shape{};
  // Attention sinks (DESIGN.md section 13): empty, or heads_q logits (finite
  // or -inf), each one more softmax column of every row of its head, never
  // scaled, masked or given a value.
  std::vector<double> sinks;
  // Dropout (DESIGN.md section 13): each (b, h, i, j) weight of P.V is kept
  // with probability 1 - p and scaled by 1 / (1 - p), as Philox decides
  // (dropout.h); lse is of the softmax before dropout.
  std::optional<DropoutOptions> dropout;
  // score_mod and mask_mod (DESIGN.md section 13) as plain functions of
  // (score, b, h, i, j) and (b, h, i, j): the score after softcap becomes
  // score_mod(score, ...), before ALiBi and the additive mask; key j is
  // visible to query i only where mask_mod holds. The backward differentiates
  // score_mod by central differences (score_mod_slope in attention_reference.h).
  std::function<double(double, uint64_t, uint64_t, uint64_t, uint64_t)> score_mod;
  std::function<bool(uint64_t, uint64_t, uint64_t, uint64_t)> mask_mod;

  // (B,Hq,Sq,D), (B,Hkv,Sk,D), (B,Hkv,Sk,Dv), already rounded to the input dtype.
  std::vector<double> q, k, v;
};

struct AttentionResult {
  std::vector<double> out;  // (B, Hq, Sq, Dv)
  std::vector<double> lse;  // (B, Hq, Sq), natural log; -inf for rows without visible keys (their out row is exactly 0;
                            // with sinks their lse is the head's sink logit)
};

}  // namespace mfagen::reference
