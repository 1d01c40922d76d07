#include "selftest/bench_case.h"

#include "spec/canonical.h"

namespace mfagen::selftest {
namespace {

using spec::Causal;
using spec::DType;
using spec::Kind;

BenchCase make_bench(std::string name, std::string model, Kind kind, DType dtype, uint32_t head_dim, Causal causal,
                     plan::CostShape small, plan::CostShape large) {
  BenchCase c{std::move(name), std::move(model), {}, small, large};
  c.kernel.kind = kind;
  c.kernel.dtype = dtype;
  c.kernel.head_dim = c.kernel.head_dim_v = head_dim;
  c.kernel.causal = causal;
  c.kernel.origin = {"mfagen bench", c.name};
  return c;
}

}  // namespace

std::vector<BenchCase> builtin_bench(bool quick) {
  std::vector<BenchCase> all;
  // CostShape: batch, heads_q, heads_kv, seq_q, seq_k[, window_left, window_right].
  all.push_back(make_bench("forward/fp16/d128/bottom_right", "Llama 3 8B prefill, 4096 tokens", Kind::forward,
                           DType::float16, 128, Causal::bottom_right, {1, 4, 1, 256, 256}, {1, 32, 8, 4096, 4096}));
  all.back().quick = true;
  all.push_back(make_bench("forward/bf16/d64/none", "encoder (BERT, ViT) attention, batch 8 of 1024 tokens",
                           Kind::forward, DType::bfloat16, 64, Causal::none, {1, 2, 2, 128, 128},
                           {8, 16, 16, 1024, 1024}));
  BenchCase window = make_bench("forward/bf16/d256/bottom_right/window", "Gemma-style sliding window of 1024 keys",
                                Kind::forward, DType::bfloat16, 256, Causal::bottom_right, {1, 2, 1, 256, 256, 64, 0},
                                {1, 16, 8, 4096, 4096, 1024, 0});
  window.kernel.window = true;
  all.push_back(window);
  all.push_back(make_bench("decode/fp16/d128/none", "Llama 3 8B decode, one token against 8192", Kind::decode,
                           DType::float16, 128, Causal::none, {1, 8, 2, 1, 2048}, {1, 32, 8, 1, 8192}));
  all.back().quick = true;
  all.push_back(make_bench("backward/fp16/d64/bottom_right", "training step of a 2048-token causal model",
                           Kind::backward, DType::float16, 64, Causal::bottom_right, {1, 2, 2, 128, 128},
                           {1, 16, 16, 2048, 2048}));
  for (BenchCase& c : all) c.kernel.name = spec::derived_name(c.kernel);
  if (quick) std::erase_if(all, [](const BenchCase& c) { return !c.quick; });
  return all;
}

const plan::CostShape& shape_of(const BenchCase& c, BenchSize size) {
  return size == BenchSize::small ? c.small : c.large;
}

}  // namespace mfagen::selftest
