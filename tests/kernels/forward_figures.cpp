// Figures for the forward kernels (not a test): device bytes one launch
// moves, counted by the cpu backend's instrumentation, against the
// FlashAttention IO model of the planner (plan/forward_cost.h), and the key
// blocks causal masking skips. Usage: forward_figures [SEQ] [HEAD_DIM]
#include <fmt/format.h>

#include <cstdlib>

#include "forward_harness.h"
#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"

using namespace mfagen;

int main(int argc, char** argv) {
  const uint64_t seq = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const uint32_t d = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 128;
  fmt::print("forward kernel, float16, Sq = Sk = {}, D = Dv = {}, batch 1, 1 head, apple9 table tiles\n", seq, d);
  fmt::print("{:<13} {:>14} {:>14} {:>14} {:>8} {:>16} {:>9} {:>8}\n", "causal", "counted bytes", "IO model",
             "minimum", "ratio", "key blocks", "skipped", "ok");
  for (spec::Causal causal : {spec::Causal::none, spec::Causal::bottom_right}) {
    test::ForwardCase c;
    c.dtype = spec::DType::float16;
    c.head_dim = d;
    c.causal = causal;
    c.seq_q = c.seq_k = seq;
    const test::ForwardOutcome outcome = test::run_forward_case(c);
    const plan::KernelPlan plan = plan::plan_kernel(test::make_spec(c));
    const plan::ForwardCost cost = plan::forward_cost(plan, {1, 1, 1, seq, seq});
    uint64_t counted = 0;  // q, k, v read; out, lse written (the params buffer is not tensor traffic)
    for (const cpu::BufferTraffic& t : outcome.launch.traffic)
      if (t.index != plan::kParamsIndex) counted += t.bytes_read + t.bytes_written;
    fmt::print("{:<13} {:>14} {:>14} {:>14} {:>8.3f} {:>7}/{:<8} {:>8.1f}% {:>8}\n", spec::to_string(causal), counted,
               cost.kernel_device_bytes, cost.min_device_bytes, double(counted) / double(cost.kernel_device_bytes),
               cost.key_blocks_visited, cost.key_blocks_total,
               100.0 * double(cost.key_blocks_total - cost.key_blocks_visited) / double(cost.key_blocks_total),
               outcome.ok() ? "yes" : "NO");
    if (!outcome.ok()) fmt::print("{}", outcome.report());
  }
  return 0;
}
