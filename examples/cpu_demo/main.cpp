// The built-in example, end to end as a user's build would do it: generate
// the kernel of examples/demo/attention.json with mfagen's generator
// (spec -> plan -> render -> emit .metal + manifest.json), then load the
// emitted .metal file, run it on the cpu backend (the generated MSL compiled
// as host code, DESIGN.md section 7) with every detector on, and check it
// against the plain float64 reference.
//
// Usage: mfagen-demo [OUT_DIR]   (default: ./mfagen-demo-kernels)
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <vector>

#include "attention_reference.h"
#include "emit/emit.h"
#include "emit/manifest.h"
#include "mfagen/cpu/backend.h"
#include "mfagen/cpu/execute_dispatch.h"
#include "mfagen/forward_dispatch.h"
#include "plan/dispatch_info.h"
#include "plan/kernel_plan.h"
#include "random_inputs.h"
#include "render/render_forward.h"
#include "spec/spec_parser.h"
#include "tolerance.h"

namespace {

using namespace mfagen;
namespace fs = std::filesystem;

std::vector<std::byte> half_buffer(const std::vector<double>& values) {
  std::vector<std::byte> bytes(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = reference::half_bits(float(values[i]));
    std::memcpy(&bytes[i * 2], &bits, 2);
  }
  return bytes;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int demo(const fs::path& out_dir) {
  // 1. Generate, as `mfagen generate examples/demo/attention.json -o OUT_DIR` does.
  const fs::path spec_file = MFAGEN_DEMO_SPEC;
  std::vector<plan::KernelPlan> plans;
  std::vector<std::string> sources;
  for (const spec::KernelSpec& s : spec::load_spec_file(spec_file)) {
    plans.push_back(plan::plan_kernel(s));
    sources.push_back(render::render_forward(plans.back()));
  }
  emit::emit_kernels(plans, sources, out_dir, {spec_file}, std::nullopt);
  const plan::KernelPlan& plan = plans.front();
  const fs::path kernel_file = out_dir / emit::kernel_file_name(plan);
  fmt::print("generated {} and {} from {}\n", kernel_file.string(), (out_dir / "manifest.json").string(),
             spec_file.filename().string());

  // 2. Run the emitted file on the CPU: 8 query heads over 2 kv heads, a
  //    96-token chunk of queries against 160 cached keys.
  reference::AttentionProblem p;
  p.batch = 1;
  p.heads_q = 8;
  p.heads_kv = 2;
  p.seq_q = 96;
  p.seq_k = 160;
  p.head_dim = p.head_dim_v = 128;
  p.causal = reference::CausalMode::bottom_right;
  p.q = reference::random_tensor(p.batch * p.heads_q * p.seq_q * 128, 1, reference::ElementType::float16);
  p.k = reference::random_tensor(p.batch * p.heads_kv * p.seq_k * 128, 2, reference::ElementType::float16);
  p.v = reference::random_tensor(p.batch * p.heads_kv * p.seq_k * 128, 3, reference::ElementType::float16);

  cpu::CompileStats compile_stats;
  auto module = cpu::compile(read_text(kernel_file), kernel_file.string(), cpu::CompileOptions{}, &compile_stats);
  ForwardCall call;
  call.shape = {p.batch, p.heads_q, p.heads_kv, p.seq_q, p.seq_k};
  call.strides = contiguous_bhsd(call.shape, 128, 128);
  const DispatchPlan dispatch = plan_forward(plan::forward_kernel_info(plan), call);
  std::vector<std::byte> q = half_buffer(p.q), k = half_buffer(p.k), v = half_buffer(p.v);
  std::vector<std::byte> out(dispatch.buffer("out")->bytes);
  std::vector<float> lse(p.batch * p.heads_q * p.seq_q);
  const cpu::DispatchResult result =
      cpu::execute(*module, dispatch,
                   {{kForwardQ, q}, {kForwardK, k}, {kForwardV, v}, {kForwardOut, out},
                    {kForwardLse, std::as_writable_bytes(std::span(lse))}});
  for (const cpu::LaunchResult& l : result.launches)
    for (const cpu::Finding& f : l.findings) fmt::print(stderr, "{}\n", f.to_string());

  // 3. Check against the float64 reference (DESIGN.md section 3 tolerance).
  std::vector<float> got(out.size() / 2);
  for (size_t i = 0; i < got.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, &out[i * 2], 2);
    got[i] = reference::half_from_bits(bits);
  }
  const auto expected = reference::reference_attention(p);
  const auto verdict = reference::check_output(got, expected, reference::naive_attention_in_dtype(p, reference::ElementType::float16),
                                               reference::ElementType::float16, p);
  const auto lse_verdict = reference::check_lse(lse, expected, p);
  const bool pass = verdict.ok && lse_verdict.ok && result.clean();
  fmt::print("{}: batch {}, heads {}/{}, seq_q {}, seq_k {}, D 128 on the cpu backend: compile {:.2f} s{}, run {:.2f} s\n",
             plan.entry, p.batch, p.heads_q, p.heads_kv, p.seq_q, p.seq_k, compile_stats.seconds,
             compile_stats.cache_hit ? " (cached)" : "", result.seconds());
  fmt::print("device traffic {} bytes read, {} written; detector findings: {}\n",
             result.launches.front().device_bytes_read, result.launches.front().device_bytes_written,
             result.findings_total());
  fmt::print("max |out - float64 reference| = {:.3g} (bound {:.3g}); lse {}: {}\n", verdict.max_abs_error,
             verdict.bound, lse_verdict.ok ? "ok" : "FAIL", pass ? "PASS" : "FAIL");
  if (!pass) fmt::print("{}\n{}\n", verdict.detail, lse_verdict.detail);
  return pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return demo(argc > 1 ? argv[1] : "mfagen-demo-kernels");
  } catch (const std::exception& e) {
    fmt::print(stderr, "mfagen-demo: {}\n", e.what());
    return 2;
  }
}
