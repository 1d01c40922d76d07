#include "forward_harness.h"

#include <fmt/format.h>

#include <cstring>
#include <span>
#include <vector>

#include "attention_reference.h"
#include "mfagen/forward_dispatch.h"
#include "plan/kernel_plan.h"
#include "random_inputs.h"
#include "render/render_forward.h"
#include "spec/canonical.h"

namespace mfagen::test {
namespace {

reference::ElementType element_type(spec::DType t) {
  switch (t) {
    case spec::DType::float16: return reference::ElementType::float16;
    case spec::DType::bfloat16: return reference::ElementType::bfloat16;
    case spec::DType::float32: return reference::ElementType::float32;
  }
  return reference::ElementType::float32;
}

reference::CausalMode causal_mode(spec::Causal c) {
  switch (c) {
    case spec::Causal::none: return reference::CausalMode::none;
    case spec::Causal::top_left: return reference::CausalMode::top_left;
    case spec::Causal::bottom_right: return reference::CausalMode::bottom_right;
  }
  return reference::CausalMode::none;
}

// A device buffer holding a BHSD tensor at the kernel's strides, in the
// kernel's element encoding; `bytes` is exactly what the dispatch plan asks for.
std::vector<std::byte> device_tensor(const std::vector<double>& bhsd, uint64_t b, uint64_t h, uint64_t s, uint64_t d,
                                     const Strides3& st, reference::ElementType type, uint64_t bytes) {
  std::vector<std::byte> buf(bytes, std::byte{0});
  const uint64_t esize = type == reference::ElementType::float32 ? 4 : 2;
  for (uint64_t ib = 0; ib < b; ++ib)
    for (uint64_t ih = 0; ih < h; ++ih)
      for (uint64_t is = 0; is < s; ++is)
        for (uint64_t id = 0; id < d; ++id) {
          const float x = float(bhsd[((ib * h + ih) * s + is) * d + id]);
          const uint64_t at = (ib * st.batch + ih * st.head + is * st.row + id) * esize;
          if (type == reference::ElementType::float32) {
            std::memcpy(&buf[at], &x, 4);
          } else {
            const uint16_t bits = type == reference::ElementType::float16 ? reference::half_bits(x)
                                                                           : reference::bfloat_bits(x);
            std::memcpy(&buf[at], &bits, 2);
          }
        }
  return buf;
}

std::vector<float> read_tensor(const std::vector<std::byte>& buf, uint64_t b, uint64_t h, uint64_t s, uint64_t d,
                               const Strides3& st, reference::ElementType type) {
  std::vector<float> out(b * h * s * d);
  const uint64_t esize = type == reference::ElementType::float32 ? 4 : 2;
  for (uint64_t ib = 0; ib < b; ++ib)
    for (uint64_t ih = 0; ih < h; ++ih)
      for (uint64_t is = 0; is < s; ++is)
        for (uint64_t id = 0; id < d; ++id) {
          const uint64_t at = (ib * st.batch + ih * st.head + is * st.row + id) * esize;
          float x;
          if (type == reference::ElementType::float32) {
            std::memcpy(&x, &buf[at], 4);
          } else {
            uint16_t bits;
            std::memcpy(&bits, &buf[at], 2);
            x = type == reference::ElementType::float16 ? reference::half_from_bits(bits)
                                                        : reference::bfloat_from_bits(bits);
          }
          out[((ib * h + ih) * s + is) * d + id] = x;
        }
  return out;
}

// (B, S, H, D) in memory: strides of the BHSD view.
Strides3 bshd_strides(uint64_t heads, uint64_t seq, uint64_t d) { return {seq * heads * d, d, heads * d}; }

}  // namespace

std::string ForwardCase::describe() const {
  return fmt::format("{} D={} Dv={} causal={} gqa={} lse={} B={} Hq={} Hkv={} Sq={} Sk={}{}{}{}", spec::to_string(dtype),
                     head_dim, head_dim_v ? head_dim_v : head_dim, spec::to_string(causal), gqa, lse, batch, heads_q,
                     heads_kv, seq_q, seq_k, bshd ? " BSHD" : "",
                     tiles ? fmt::format(" tiles {}/{}/{}", tiles->block_q, tiles->block_k, tiles->simdgroups) : "",
                     target != spec::Target::apple9 ? fmt::format(" {}", spec::to_string(target)) : "");
}

std::string ForwardOutcome::report() const {
  std::string r = fmt::format("out: {} (max error {:.3g}, naive {:.3g}, bound {:.3g}) {}\nlse: {} {}\n",
                              out.ok ? "ok" : "FAIL", out.max_abs_error, out.naive_error, out.bound, out.detail,
                              lse.ok ? "ok" : "FAIL", lse.detail);
  for (const cpu::Finding& f : launch.findings) r += f.to_string() + "\n";
  return r;
}

spec::KernelSpec make_spec(const ForwardCase& c) {
  spec::KernelSpec s;
  s.dtype = c.dtype;
  s.head_dim = c.head_dim;
  s.head_dim_v = c.head_dim_v ? c.head_dim_v : c.head_dim;
  s.causal = c.causal;
  s.gqa = c.gqa;
  s.lse = c.lse;
  s.tiles = c.tiles;
  s.target = c.target;
  s.name = spec::derived_name(s);
  s.origin = {"test", ""};
  return s;
}

ForwardOutcome run_forward_case(const ForwardCase& c) {
  const plan::KernelPlan plan = plan::plan_kernel(make_spec(c));
  ForwardOutcome outcome;
  outcome.kernel_source = render::render_forward(plan);
  auto module = cpu::compile(outcome.kernel_source, plan.entry + ".metal", cpu::CompileOptions{});

  const reference::ElementType type = element_type(c.dtype);
  reference::AttentionProblem problem;
  problem.batch = c.batch;
  problem.heads_q = c.heads_q;
  problem.heads_kv = c.heads_kv;
  problem.seq_q = c.seq_q;
  problem.seq_k = c.seq_k;
  problem.head_dim = plan.spec.head_dim;
  problem.head_dim_v = plan.spec.head_dim_v;
  problem.causal = causal_mode(c.causal);
  problem.scale = c.scale;
  problem.q = reference::random_tensor(c.batch * c.heads_q * c.seq_q * problem.head_dim, c.seed * 3 + 0, type);
  problem.k = reference::random_tensor(c.batch * c.heads_kv * c.seq_k * problem.head_dim, c.seed * 3 + 1, type);
  problem.v = reference::random_tensor(c.batch * c.heads_kv * c.seq_k * problem.head_dim_v, c.seed * 3 + 2, type);

  const AttentionShape shape{c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_k};
  ForwardStrides strides = contiguous_bhsd(shape, plan.spec.head_dim, plan.spec.head_dim_v);
  if (c.bshd) {
    strides.q = bshd_strides(c.heads_q, c.seq_q, plan.spec.head_dim);
    strides.k = bshd_strides(c.heads_kv, c.seq_k, plan.spec.head_dim);
    strides.v = bshd_strides(c.heads_kv, c.seq_k, plan.spec.head_dim_v);
    strides.out = bshd_strides(c.heads_q, c.seq_q, plan.spec.head_dim_v);
  }
  const ForwardKernelInfo info{plan.entry,  spec::dtype_bytes(c.dtype), plan.spec.head_dim, plan.spec.head_dim_v,
                               plan.block_q, plan.threads, plan.threadgroup_bytes, plan.spec.gqa, plan.spec.lse};
  const DispatchPlan dispatch = plan_forward(info, shape, strides, c.scale);

  std::vector<std::byte> q = device_tensor(problem.q, c.batch, c.heads_q, c.seq_q, problem.head_dim, strides.q, type,
                                           dispatch.buffers[0].bytes);
  std::vector<std::byte> k = device_tensor(problem.k, c.batch, c.heads_kv, c.seq_k, problem.head_dim, strides.k, type,
                                           dispatch.buffers[1].bytes);
  std::vector<std::byte> v = device_tensor(problem.v, c.batch, c.heads_kv, c.seq_k, problem.head_dim_v, strides.v,
                                           type, dispatch.buffers[2].bytes);
  std::vector<std::byte> out(dispatch.buffers[3].bytes, std::byte{0x7f});  // garbage: every element must be written
  std::vector<float> lse(c.batch * c.heads_q * c.seq_q, 12345.0f);
  std::vector<std::byte> params = dispatch.params;

  cpu::LaunchOptions launch;
  launch.threadgroups = {dispatch.threadgroups[0], dispatch.threadgroups[1], dispatch.threadgroups[2]};
  launch.threads_per_threadgroup = {dispatch.threads_per_threadgroup[0], dispatch.threads_per_threadgroup[1],
                                    dispatch.threads_per_threadgroup[2]};
  launch.buffers = {{0, q}, {1, k}, {2, v}, {3, out}, {5, params}};
  if (c.lse) launch.buffers.push_back({4, std::as_writable_bytes(std::span(lse))});
  outcome.launch = cpu::launch(*module, plan.entry, launch);

  const reference::AttentionResult expected = reference::reference_attention(problem);
  const reference::AttentionResult naive = reference::naive_attention_in_dtype(problem, type);
  const std::vector<float> got = read_tensor(out, c.batch, c.heads_q, c.seq_q, problem.head_dim_v, strides.out, type);
  outcome.out = reference::check_output(got, expected, naive, type, problem);
  outcome.lse = c.lse ? reference::check_lse(lse, expected, problem) : reference::ToleranceVerdict{true, 0, 0, 0, "no lse"};
  return outcome;
}

}  // namespace mfagen::test
