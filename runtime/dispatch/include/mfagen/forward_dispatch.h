// Dispatch planning for forward attention kernels (DESIGN.md sections 3, 8):
// a kernel's launch facts + a call's shape and strides -> a DispatchPlan,
// plain data that any backend (cpu here, metal on Apple) executes. No
// dependency on the generator, clang or JSON.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mfagen {

// What the runtime must know about a generated forward kernel to launch it
// (recorded in manifest.json by the generator).
struct ForwardKernelInfo {
  std::string entry;
  uint32_t element_bytes = 2;     // q, k, v, out: 2 (half, bfloat) or 4 (float)
  uint32_t head_dim = 0;
  uint32_t head_dim_v = 0;
  uint32_t block_q = 0;
  uint32_t threads = 0;           // per threadgroup
  uint32_t threadgroup_bytes = 0; // static, declared in the kernel
  bool gqa = true;
  bool lse = true;
};

struct AttentionShape {
  uint64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_k = 1;
};

// Element strides of a 4-d tensor (batch, head, row); the last dimension is contiguous.
struct Strides3 {
  uint64_t batch = 0, head = 0, row = 0;
};

struct ForwardStrides {
  Strides3 q, k, v, out;
  uint64_t lse_batch = 0, lse_head = 0;  // lse rows are contiguous
};

// Contiguous BHSD strides for a shape.
ForwardStrides contiguous_bhsd(const AttentionShape& shape, uint32_t head_dim, uint32_t head_dim_v);

// The kernel's `AttentionParams` (templates/attention_forward.metal.mustache),
// byte for byte: natural alignment, 8-byte fields first.
struct ForwardParams {
  uint64_t q_strides[3];
  uint64_t k_strides[3];
  uint64_t v_strides[3];
  uint64_t out_strides[3];
  uint64_t lse_strides[2];
  uint32_t batch, heads_q, heads_kv, seq_q, seq_k;
  float scale_log2;
};
static_assert(sizeof(ForwardParams) == 136, "ForwardParams must match the kernel's AttentionParams");

struct BufferRequirement {
  uint32_t index = 0;
  std::string name;   // q, k, v, out, lse, params
  uint64_t bytes = 0; // smallest buffer the kernel may touch for this call
  bool written = false;
};

struct DispatchPlan {
  std::string entry;
  std::array<uint32_t, 3> threadgroups{1, 1, 1};
  std::array<uint32_t, 3> threads_per_threadgroup{1, 1, 1};
  uint32_t threadgroup_bytes = 0;
  std::vector<BufferRequirement> buffers;  // by index; includes params
  std::vector<std::byte> params;           // contents of the params buffer
};

// A call the kernel cannot run: the message names the argument and what was expected.
class DispatchError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// scale <= 0 means the default 1/sqrt(head_dim).
DispatchPlan plan_forward(const ForwardKernelInfo& kernel, const AttentionShape& shape, const ForwardStrides& strides,
                          double scale = 0);

}  // namespace mfagen
