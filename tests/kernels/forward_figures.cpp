// Figures for the forward kernels (not a test): device bytes one launch
// moves, counted by the cpu backend's instrumentation, against the
// FlashAttention IO model of the planner (plan/forward_cost.h), and the key
// blocks causal masking and sliding windows skip.
// Usage: forward_figures [SEQ] [HEAD_DIM] [WINDOW_LEFT]
//        forward_figures decode [SEQ_K] [HEAD_DIM]   (1 query, 8 q heads over 1 kv head)
//        forward_figures backward [SEQ] [HEAD_DIM]
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "forward_harness.h"
#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"

using namespace mfagen;

// Decode: bytes one split-K call moves (both kernels) against reading K and
// V once, which is what decoding one token must cost at least.
int decode_figures(uint64_t seq_k, uint32_t d) {
  test::ForwardCase c;
  c.kind = spec::Kind::decode;
  c.dtype = spec::DType::float16;
  c.head_dim = d;
  c.heads_q = 8;
  c.heads_kv = 1;
  c.seq_q = 1;
  c.seq_k = seq_k;
  const test::ForwardOutcome outcome = test::run_forward_case(c);
  uint64_t kv = 0, total = 0;
  for (const auto& [index, t] : outcome.dispatch.traffic()) {
    if (index == plan::kParamsIndex) continue;
    total += t.bytes_read + t.bytes_written;
    if (index == plan::kKIndex || index == plan::kVIndex) kv += t.bytes_read;
  }
  const uint64_t minimum = 2 * seq_k * d * 2 + 2 * 8 * d * 2 + 8 * 4;  // K, V once; q, out, lse
  fmt::print("decode float16, Sq = 1, Sk = {}, D = {}, 8 q heads over 1 kv head: {} splits\n", seq_k, d,
             outcome.splits);
  fmt::print("K+V bytes read {} (K and V once: {}), all device bytes {} = {:.3f} x the minimum {}; ok: {}\n", kv,
             2 * seq_k * d * 2, total, double(total) / double(minimum), minimum, outcome.ok() ? "yes" : "NO");
  return outcome.ok() ? 0 : 1;
}

// Backward: bytes the three backward launches move against FlashAttention-2's
// backward IO model, and backward work against forward work.
int backward_figures(uint64_t seq, uint32_t d) {
  fmt::print("backward float16, Sq = Sk = {}, D = Dv = {}, batch 1, 1 head\n", seq, d);
  for (spec::Causal causal : {spec::Causal::none, spec::Causal::bottom_right}) {
    test::ForwardCase c;
    c.kind = spec::Kind::backward;
    c.dtype = spec::DType::float16;
    c.head_dim = d;
    c.causal = causal;
    c.seq_q = c.seq_k = seq;
    const test::ForwardOutcome outcome = test::run_forward_case(c);
    uint64_t counted = 0;
    for (const auto& [index, t] : outcome.backward.traffic())
      if (index != plan::kParamsIndex && index != plan::kDRowsIndex) counted += t.bytes_read + t.bytes_written;
    for (const auto& [index, t] : outcome.backward.traffic())
      if (index == plan::kDRowsIndex) counted += t.bytes_read + t.bytes_written;  // D is device memory too
    const plan::KernelPlan bplan = plan::plan_kernel(test::make_spec(c));
    test::ForwardCase fc = c;
    fc.kind = spec::Kind::forward;
    const plan::KernelPlan fplan = plan::plan_kernel(test::make_spec(fc));
    const plan::BackwardCost cost = plan::backward_cost(bplan, {1, 1, 1, seq, seq});
    const plan::ForwardCost fcost = plan::forward_cost(fplan, {1, 1, 1, seq, seq});
    fmt::print("{:<13} counted {} bytes, kernel model {} (ratio {:.3f}), FlashAttention-2 model {} (x{:.2f}); "
               "backward/forward FLOPs {:.2f}, run time {:.2f}; ok: {}\n",
               spec::to_string(causal), counted, cost.kernel_device_bytes,
               double(counted) / double(cost.kernel_device_bytes), cost.fa2_model_bytes,
               double(counted) / double(cost.fa2_model_bytes), cost.flops / fcost.flops,
               outcome.backward.seconds() / outcome.dispatch.seconds(), outcome.ok() ? "yes" : "NO");
    if (!outcome.ok()) fmt::print("{}", outcome.report());
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "backward")
    return backward_figures(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024,
                            argc > 3 ? uint32_t(std::strtoul(argv[3], nullptr, 10)) : 128);
  if (argc > 1 && std::string(argv[1]) == "decode")
    return decode_figures(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 32768,
                          argc > 3 ? uint32_t(std::strtoul(argv[3], nullptr, 10)) : 128);
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
