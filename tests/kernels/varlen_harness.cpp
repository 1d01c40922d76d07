#include "serving_harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <span>
#include <tuple>

#include "attention_backward_reference.h"
#include "attention_reference.h"
#include "device_tensor.h"
#include "gradient_tolerance.h"
#include "packed_batch.h"
#include "plan/dispatch_info.h"
#include "plan/kernel_plan.h"
#include "random_inputs.h"
#include "render/render_forward.h"
#include "quantized_kv_harness.h"
#include "selftest/case_inputs.h"

namespace mfagen::test {
namespace {

std::vector<int32_t> cumulative(const std::vector<uint32_t>& lengths) {
  std::vector<int32_t> cu = {0};
  for (uint32_t n : lengths) cu.push_back(cu.back() + int32_t(n));
  return cu;
}

// A packed (T, H, C) tensor as kernel bytes (its rows are contiguous).
std::vector<std::byte> packed_bytes(const std::vector<double>& packed, uint64_t columns, reference::ElementType type,
                                    uint64_t bytes) {
  const uint64_t rows = packed.size() / columns;
  return device_tensor(packed, 1, 1, rows, columns, {0, 0, columns}, type, bytes);
}
std::vector<float> packed_values(const std::vector<std::byte>& bytes, uint64_t rows, uint64_t columns,
                                 reference::ElementType type) {
  return read_tensor(bytes, 1, 1, rows, columns, {0, 0, columns}, type);
}

// Sequence rows [start, start + length) of a packed kernel output, as the
// dense (1, H, length, C) tensor the sequence's reference has.
std::vector<float> sequence_rows(const std::vector<float>& packed, uint64_t heads, uint64_t columns, uint64_t start,
                                 uint64_t length) {
  const std::vector<double> wide(packed.begin(), packed.end());
  const std::vector<double> dense = reference::unpack_rows(wide, heads, columns, start, length);
  return std::vector<float>(dense.begin(), dense.end());
}

}  // namespace

void merge(reference::ToleranceVerdict& into, const reference::ToleranceVerdict& v, uint64_t sequence) {
  into.ok = into.ok && v.ok;
  into.max_abs_error = std::max(into.max_abs_error, v.max_abs_error);
  into.naive_error = std::max(into.naive_error, v.naive_error);
  into.bound = std::max(into.bound, v.bound);
  if (!v.ok) into.detail += fmt::format("[sequence {}] {} ", sequence, v.detail);
}

ForwardOutcome run_varlen_case(const ForwardCase& given) {
  ForwardCase c = given;
  c.batch = c.varlen_q.size();
  const uint64_t batch = c.batch;
  const std::vector<int32_t> cu_q = cumulative(c.varlen_q), cu_k = cumulative(c.varlen_k);
  const uint64_t total_q = uint64_t(cu_q.back()), total_k = uint64_t(cu_k.back());
  // The grid covers the longest sequence (at least one row, as the runtime asks).
  const uint64_t longest_q = std::max<uint64_t>(1, *std::max_element(c.varlen_q.begin(), c.varlen_q.end()));
  const uint64_t longest_k = std::max<uint64_t>(1, *std::max_element(c.varlen_k.begin(), c.varlen_k.end()));

  const CaseKernel kernel = compile_forward_kernel(c);
  const plan::KernelPlan& plan = kernel.plan;
  const auto& module = kernel.module;
  ForwardOutcome outcome;
  outcome.kernel_source = kernel.source;

  const reference::ElementType type = selftest::reference_type(c.dtype);
  const uint32_t d = plan.spec.head_dim, dv = plan.spec.head_dim_v;
  reference::PackedBatch packed;
  reference::AttentionProblem& o = packed.options;
  o = case_options(c, d, dv);
  if (c.alibi) o.alibi_slopes = case_alibi_slopes(c);
  if (c.sinks) o.sinks = case_sinks(c);
  packed.cu_seqlens_q = cu_q;
  packed.cu_seqlens_k = cu_k;
  packed.q = reference::random_tensor(total_q * c.heads_q * d, c.seed * 3 + 0, type, c.q_scale);
  const uint64_t kv_rows = total_k * c.heads_kv;
  const CaseKv k_rows = case_kv(c, kv_rows, d, c.seed * 3 + 1, case_k_scale(c));
  const CaseKv v_rows = case_kv(c, kv_rows, dv, c.seed * 3 + 2, case_v_scale(c));
  packed.k = k_rows.values;
  packed.v = v_rows.values;

  const AttentionShape shape{batch, c.heads_q, c.heads_kv, longest_q, longest_k};
  ForwardCall call;
  call.shape = shape;
  const KvFormat kv_format = case_kv_format(c);
  call.strides = packed_varlen(shape, total_q, d, dv, kv_format);
  call.k_scale = case_k_scale(c);
  call.v_scale = case_v_scale(c);
  call.total_q = total_q;
  call.total_k = total_k;
  call.scale = c.scale;
  call.softcap = c.softcap;
  if (c.window) std::tie(call.window_left, call.window_right) = *c.window;
  call.alibi_per_batch = c.alibi_per_batch;
  const DispatchPlan dispatch = plan_forward(plan::forward_kernel_info(plan), call);

  std::vector<std::byte> q = packed_bytes(packed.q, d, type, dispatch.buffer("q")->bytes);
  const uint64_t k_row = kv_row_units(kv_format, d), v_row = kv_row_units(kv_format, dv);
  std::vector<std::byte> k = case_kv_buffer(c, k_rows, 1, 1, kv_rows, d, {0, 0, k_row}, dispatch.buffer("k")->bytes);
  std::vector<std::byte> v = case_kv_buffer(c, v_rows, 1, 1, kv_rows, dv, {0, 0, v_row}, dispatch.buffer("v")->bytes);
  std::vector<std::byte> out(dispatch.buffer("out")->bytes, std::byte{0x7f});  // garbage: every row must be written
  std::vector<float> lse(c.heads_q * total_q, 12345.0f);
  std::vector<int32_t> cu_q_buffer = cu_q, cu_k_buffer = cu_k;
  if (c.corrupt_cu_seqlens) {
    for (size_t b = 0; b < cu_q_buffer.size(); ++b) {
      cu_q_buffer[b] = b % 2 ? int32_t(total_q) * 3 + 17 : -int32_t(b) * 5;
      cu_k_buffer[b] = b % 2 ? -9 : int32_t(total_k) + int32_t(b) * 40;
    }
  }
  std::vector<float> slopes(o.alibi_slopes.begin(), o.alibi_slopes.end()), sinks(o.sinks.begin(), o.sinks.end());
  std::map<uint32_t, std::span<std::byte>> tensors = {
      {plan::kQIndex, q}, {plan::kKIndex, k}, {plan::kVIndex, v}, {plan::kOutIndex, out},
      {plan::kCuSeqlensQIndex, std::as_writable_bytes(std::span(cu_q_buffer))},
      {plan::kCuSeqlensKIndex, std::as_writable_bytes(std::span(cu_k_buffer))}};
  if (c.lse) tensors[plan::kLseIndex] = std::as_writable_bytes(std::span(lse));
  if (c.alibi) tensors[plan::kAlibiIndex] = std::as_writable_bytes(std::span(slopes));
  if (c.sinks) tensors[plan::kSinksIndex] = std::as_writable_bytes(std::span(sinks));
  outcome.dispatch = cpu::execute(*module, dispatch, tensors, {}, {}, c.tensor_layout_seed);

  const std::vector<float> got_out = packed_values(out, total_q * c.heads_q, dv, type);
  outcome.out_values = got_out;
  outcome.lse_values = lse;
  outcome.judge_forward = c.judge_forward;
  outcome.out = {true, 0, 0, 0, c.corrupt_cu_seqlens ? "not judged: corrupt cu_seqlens" : ""};
  outcome.lse = {true, 0, 0, 0, c.lse ? "" : "no lse"};
  std::vector<reference::AttentionProblem> problems;
  for (uint64_t b = 0; b < batch && !c.corrupt_cu_seqlens; ++b) {
    problems.push_back(reference::sequence_problem(packed, b));
    const reference::AttentionProblem& p = problems.back();
    if (p.seq_q == 0) continue;  // nothing to judge (and nothing may be written: the detectors would say)
    const reference::AttentionResult expected = reference::reference_attention(p);
    const reference::AttentionResult naive = reference::naive_attention_in_dtype(with_kv_in(p, type), type);
    const uint64_t start = uint64_t(cu_q[b]);
    merge(outcome.out,
          reference::check_output(sequence_rows(got_out, c.heads_q, dv, start, p.seq_q), expected, naive, type, p), b);
    if (!c.lse) continue;
    std::vector<float> lse_b;  // (Hq, total_q) -> (1, Hq, Sq_b)
    for (uint64_t h = 0; h < c.heads_q; ++h)
      for (uint64_t i = 0; i < p.seq_q; ++i) lse_b.push_back(lse[h * total_q + start + i]);
    merge(outcome.lse, reference::check_lse(lse_b, expected, p), b);
  }
  if (c.kind != spec::Kind::backward) return outcome;

  // dO, then the backward kernels on the forward's out and lse.
  const std::vector<double> d_out = reference::random_tensor(total_q * c.heads_q * dv, c.seed * 3 + 7, type);
  const plan::KernelPlan bplan = plan::plan_kernel(make_spec(c));
  auto bmodule = cpu::compile(render::render_forward(bplan), bplan.entry + ".metal", cpu::CompileOptions{});
  const DispatchPlan bdispatch = plan_forward(plan::forward_kernel_info(bplan), call);
  std::vector<std::byte> do_bytes = packed_bytes(d_out, dv, type, bdispatch.buffer("d_out")->bytes);
  std::vector<std::byte> dq(bdispatch.buffer("dq")->bytes, std::byte{0x7f}),
      dk(bdispatch.buffer("dk")->bytes, std::byte{0x7f}), dv_bytes(bdispatch.buffer("dv")->bytes, std::byte{0x7f});
  std::vector<float> d_sinks(c.sinks ? c.heads_q : 0, 12345.0f);
  tensors[plan::kDOutIndex] = do_bytes;
  tensors[plan::kDqIndex] = dq;
  tensors[plan::kDkIndex] = dk;
  tensors[plan::kDvIndex] = dv_bytes;
  if (c.sinks) tensors[plan::kDSinksIndex] = std::as_writable_bytes(std::span(d_sinks));
  outcome.backward = cpu::execute(*bmodule, bdispatch, tensors);
  if (c.corrupt_cu_seqlens) return outcome;  // only the findings count

  const std::vector<float> got_dq = packed_values(dq, total_q * c.heads_q, d, type);
  const std::vector<float> got_dk = packed_values(dk, total_k * c.heads_kv, d, type);
  const std::vector<float> got_dv = packed_values(dv_bytes, total_k * c.heads_kv, dv, type);
  outcome.gradient_values = {got_dq, got_dk, got_dv};
  std::vector<reference::ToleranceVerdict> verdicts(3, reference::ToleranceVerdict{true, 0, 0, 0, ""});
  std::vector<double> want_d_sinks(c.sinks ? c.heads_q : 0), naive_d_sinks(want_d_sinks.size());
  for (uint64_t b = 0; b < batch; ++b) {
    const reference::AttentionProblem& p = problems[b];
    const std::vector<double> d_out_b = reference::unpack_rows(d_out, c.heads_q, dv, uint64_t(cu_q[b]), p.seq_q);
    const reference::AttentionGradients want = reference::reference_attention_backward(p, d_out_b);
    const reference::AttentionGradients naive = reference::naive_attention_backward_in_dtype(p, d_out_b, type);
    for (size_t h = 0; h < want.d_sinks.size(); ++h) {
      want_d_sinks[h] += want.d_sinks[h];
      naive_d_sinks[h] += naive.d_sinks[h];
    }
    const uint64_t q0 = uint64_t(cu_q[b]), k0 = uint64_t(cu_k[b]);
    if (p.seq_q > 0)
      merge(verdicts[0], reference::check_gradient(sequence_rows(got_dq, c.heads_q, d, q0, p.seq_q), want.dq,
                                                   naive.dq, type, "dq", {1, c.heads_q, p.seq_q, d}), b);
    if (p.seq_k > 0) {
      merge(verdicts[1], reference::check_gradient(sequence_rows(got_dk, c.heads_kv, d, k0, p.seq_k), want.dk,
                                                   naive.dk, type, "dk", {1, c.heads_kv, p.seq_k, d}), b);
      merge(verdicts[2], reference::check_gradient(sequence_rows(got_dv, c.heads_kv, dv, k0, p.seq_k), want.dv,
                                                   naive.dv, type, "dv", {1, c.heads_kv, p.seq_k, dv}), b);
    }
  }
  outcome.gradients = verdicts;
  if (c.sinks) {
    outcome.gradient_values.push_back(d_sinks);
    outcome.gradients.push_back(
        reference::check_gradient(d_sinks, want_d_sinks, naive_d_sinks, type, "d_sinks", {1, 1, 1, c.heads_q}));
  }
  return outcome;
}

}  // namespace mfagen::test
