// The built-in set of `mfagen bench`: kernels of common models, each at a
// small shape (a fraction of a second per call on the cpu backend, so the
// logic can be run and tested anywhere) and at a realistic shape worth
// timing on an Apple GPU.
#pragma once

#include <string>
#include <vector>

#include "plan/forward_cost.h"
#include "spec/kernel_spec.h"

namespace mfagen::selftest {

struct BenchCase {
  std::string name;          // e.g. "forward/fp16/d128/bottom_right"
  std::string model;         // where the shape comes from, e.g. "Llama 3 8B prefill, 4096 tokens"
  spec::KernelSpec kernel;   // name derived
  plan::CostShape small;     // the cpu backend's default
  plan::CostShape large;     // the Metal backend's default
  bool quick = false;        // also in --quick
};

enum class BenchSize { small, large };

// In a fixed order. --quick: a forward and a decode kernel.
std::vector<BenchCase> builtin_bench(bool quick);

const plan::CostShape& shape_of(const BenchCase& c, BenchSize size);

}  // namespace mfagen::selftest
