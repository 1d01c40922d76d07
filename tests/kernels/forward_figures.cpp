// Figures for the forward kernels (not a test): device bytes one launch
// moves, counted by the cpu backend's instrumentation, against the
// FlashAttention IO model of the planner (plan/forward_cost.h), and the key
// blocks causal masking and sliding windows skip.
// Usage: forward_figures [SEQ] [HEAD_DIM] [WINDOW_LEFT]
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "forward_harness.h"
#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"

using namespace mfagen;

int main(int argc, char** argv) {
  const uint64_t seq = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const uint32_t d = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 128;
  const int64_t window = argc > 3 ? std::strtoll(argv[3], nullptr, 10) : 256;
  fmt::print("forward kernel, float16, Sq = Sk = {}, D = Dv = {}, batch 1, 1 head, apple9 table tiles\n", seq, d);
  fmt::print("{:<22} {:>14} {:>14} {:>14} {:>8} {:>16} {:>9} {:>10} {:>5}\n", "causal / window", "counted bytes",
             "IO model", "minimum", "ratio", "key blocks", "skipped", "visible", "ok");
  struct Row {
    spec::Causal causal;
    bool window;
  };
  for (Row row : {Row{spec::Causal::none, false}, Row{spec::Causal::bottom_right, false}, Row{spec::Causal::none, true},
                  Row{spec::Causal::bottom_right, true}}) {
    test::ForwardCase c;
    c.dtype = spec::DType::float16;
    c.head_dim = d;
    c.causal = row.causal;
    c.seq_q = c.seq_k = seq;
    if (row.window) c.window = {{window, row.causal == spec::Causal::none ? window : -1}};
    const test::ForwardOutcome outcome = test::run_forward_case(c);
    const plan::KernelPlan plan = plan::plan_kernel(test::make_spec(c));
    plan::CostShape shape{1, 1, 1, seq, seq};
    if (c.window) std::tie(shape.window_left, shape.window_right) = *c.window;
    const plan::ForwardCost cost = plan::forward_cost(plan, shape);
    uint64_t counted = 0;  // q, k, v read; out, lse written (the params buffer is not tensor traffic)
    for (const auto& [index, t] : outcome.dispatch.traffic())
      if (index != plan::kParamsIndex) counted += t.bytes_read + t.bytes_written;
    const std::string label = fmt::format("{}{}", spec::to_string(row.causal),
                                          c.window ? fmt::format(" w({},{})", c.window->first, c.window->second) : "");
    fmt::print("{:<22} {:>14} {:>14} {:>14} {:>8.3f} {:>7}/{:<8} {:>8.1f}% {:>9.1f}% {:>5}\n", label, counted,
               cost.kernel_device_bytes, cost.min_device_bytes, double(counted) / double(cost.kernel_device_bytes),
               cost.key_blocks_visited, cost.key_blocks_total,
               100.0 * double(cost.key_blocks_total - cost.key_blocks_visited) / double(cost.key_blocks_total),
               100.0 * cost.visible_pairs / (double(seq) * double(seq)), outcome.ok() ? "yes" : "NO");
    if (!outcome.ok()) fmt::print("{}", outcome.report());
  }
  return 0;
}
