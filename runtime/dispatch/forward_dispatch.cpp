#include "mfagen/forward_dispatch.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace mfagen {
namespace {

constexpr uint64_t kMaxSeq = std::numeric_limits<int32_t>::max();  // kernels index rows with int

uint64_t checked_mul(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw DispatchError(std::string(what) + ": size overflows 64 bits");
  return r;
}
uint64_t checked_add(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw DispatchError(std::string(what) + ": size overflows 64 bits");
  return r;
}

// Bytes from the first to one past the last element a (batch, heads, rows, cols) view touches.
uint64_t span_bytes(const Strides3& s, uint64_t batch, uint64_t heads, uint64_t rows, uint64_t cols, uint64_t elem,
                    std::string_view what) {
  uint64_t last = checked_mul(batch - 1, s.batch, what);
  last = checked_add(last, checked_mul(heads - 1, s.head, what), what);
  last = checked_add(last, checked_mul(rows - 1, s.row, what), what);
  last = checked_add(last, cols, what);
  return checked_mul(last, elem, what);
}

void require(bool ok, const std::string& message) {
  if (!ok) throw DispatchError(message);
}

}  // namespace

ForwardStrides contiguous_bhsd(const AttentionShape& s, uint32_t d, uint32_t dv) {
  ForwardStrides st;
  st.q = {s.heads_q * s.seq_q * d, s.seq_q * d, d};
  st.k = {s.heads_kv * s.seq_k * d, s.seq_k * d, d};
  st.v = {s.heads_kv * s.seq_k * dv, s.seq_k * dv, dv};
  st.out = {s.heads_q * s.seq_q * dv, s.seq_q * dv, dv};
  st.lse_batch = s.heads_q * s.seq_q;
  st.lse_head = s.seq_q;
  return st;
}

DispatchPlan plan_forward(const ForwardKernelInfo& kernel, const AttentionShape& shape,
                          const ForwardStrides& strides, double scale) {
  require(shape.batch >= 1 && shape.heads_q >= 1 && shape.heads_kv >= 1 && shape.seq_q >= 1 && shape.seq_k >= 1,
          "every dimension of the shape (batch, heads_q, heads_kv, seq_q, seq_k) must be at least 1");
  require(shape.seq_q <= kMaxSeq && shape.seq_k <= kMaxSeq, "seq_q and seq_k must be below 2^31");
  require(shape.batch <= UINT32_MAX && shape.heads_q <= UINT32_MAX && shape.heads_kv <= UINT32_MAX,
          "batch and heads must be below 2^32 (one grid dimension each)");
  require(shape.heads_q % shape.heads_kv == 0,
          "heads_q (" + std::to_string(shape.heads_q) + ") must be a multiple of heads_kv (" +
              std::to_string(shape.heads_kv) + ")");
  require(kernel.gqa || shape.heads_q == shape.heads_kv,
          "kernel " + kernel.entry + " was generated with gqa=false: heads_q (" + std::to_string(shape.heads_q) +
              ") must equal heads_kv (" + std::to_string(shape.heads_kv) + ")");
  if (scale <= 0) scale = 1.0 / std::sqrt(double(kernel.head_dim));
  require(std::isfinite(scale), "scale must be finite");

  DispatchPlan plan;
  plan.entry = kernel.entry;
  plan.threadgroups = {uint32_t((shape.seq_q + kernel.block_q - 1) / kernel.block_q), uint32_t(shape.heads_q),
                       uint32_t(shape.batch)};
  plan.threads_per_threadgroup = {kernel.threads, 1, 1};
  plan.threadgroup_bytes = kernel.threadgroup_bytes;

  const uint64_t e = kernel.element_bytes;
  plan.buffers.push_back({0, "q", span_bytes(strides.q, shape.batch, shape.heads_q, shape.seq_q, kernel.head_dim, e, "q"), false});
  plan.buffers.push_back({1, "k", span_bytes(strides.k, shape.batch, shape.heads_kv, shape.seq_k, kernel.head_dim, e, "k"), false});
  plan.buffers.push_back({2, "v", span_bytes(strides.v, shape.batch, shape.heads_kv, shape.seq_k, kernel.head_dim_v, e, "v"), false});
  plan.buffers.push_back({3, "out", span_bytes(strides.out, shape.batch, shape.heads_q, shape.seq_q, kernel.head_dim_v, e, "out"), true});
  if (kernel.lse)
    plan.buffers.push_back({4, "lse", span_bytes({strides.lse_batch, strides.lse_head, 1}, shape.batch, shape.heads_q, 1, shape.seq_q, 4, "lse"), true});

  ForwardParams p{};
  const Strides3* tensors[] = {&strides.q, &strides.k, &strides.v, &strides.out};
  uint64_t(*fields[])[3] = {&p.q_strides, &p.k_strides, &p.v_strides, &p.out_strides};
  for (int t = 0; t < 4; ++t) {
    (*fields[t])[0] = tensors[t]->batch;
    (*fields[t])[1] = tensors[t]->head;
    (*fields[t])[2] = tensors[t]->row;
  }
  p.lse_strides[0] = strides.lse_batch;
  p.lse_strides[1] = strides.lse_head;
  p.batch = uint32_t(shape.batch);
  p.heads_q = uint32_t(shape.heads_q);
  p.heads_kv = uint32_t(shape.heads_kv);
  p.seq_q = uint32_t(shape.seq_q);
  p.seq_k = uint32_t(shape.seq_k);
  p.scale_log2 = float(scale * 1.4426950408889634);  // log2(e)
  plan.params.resize(sizeof p);
  std::memcpy(plan.params.data(), &p, sizeof p);
  plan.buffers.push_back({5, "params", sizeof p, false});
  return plan;
}

}  // namespace mfagen
