// Which kernel of a spec set `mfagen run` uses for a call: the first one, in
// spec order, whose compile-time facts fit the call (head dims, GQA, the
// inputs and options given, and --dtype / --causal when given); for calls
// with at most 16 queries a decode kernel is preferred when the set has one.
// A stand-in for the runtime's selection table (DESIGN.md section 8).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/kernel_plan.h"

namespace mfagen::cli {

struct RunRequest {
  uint64_t head_dim = 0, head_dim_v = 0, heads_q = 0, heads_kv = 0, seq_q = 0;
  bool mask = false, alibi = false, softcap = false, window = false, backward = false;
  std::optional<spec::DType> dtype;
  std::optional<spec::Causal> causal;
  std::string describe() const;
};

// The chosen plan, or UserError listing what was asked and what the set has.
const plan::KernelPlan& select_kernel(const std::vector<plan::KernelPlan>& plans, const RunRequest& request,
                                      const std::string& spec_file);

}  // namespace mfagen::cli
