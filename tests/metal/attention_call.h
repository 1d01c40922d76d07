// One attention call of a generated kernel with seeded inputs for every
// buffer its plan lists (features included), and the float64 problem those
// inputs describe, for the Metal backend tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "attention_problem.h"
#include "dtype_rounding.h"
#include "mfagen/backend.h"
#include "mfagen/library.h"

namespace mfagen::test {

struct AttentionCall {
  ForwardCall call;
  reference::AttentionProblem problem;  // q, k, v and the features, in float64
  reference::ElementType type{};
  std::vector<double> d_out;            // backward kernels: dO
  std::map<uint32_t, std::vector<std::byte>> inputs;  // by buffer index; outputs zero-filled
};

// A call of `kernel` with seq_q queries (decode kernels: at most 16) and
// seq_k keys; GQA kernels get 4 query heads on 2 KV heads.
AttentionCall make_call(const KernelEntry& kernel, uint64_t seq_q, uint64_t seq_k, uint64_t seed);

// Fresh copies of the call's buffers, as TensorMap spans into `storage`.
TensorMap bind(std::map<uint32_t, std::vector<std::byte>>& storage);

// A kernel buffer of `type` elements widened exactly to float.
std::vector<float> widen(const std::vector<std::byte>& bytes, reference::ElementType type);

}  // namespace mfagen::test
