#include "run_selection.h"

#include <fmt/format.h>

#include "errors.h"
#include "mfagen/forward_dispatch.h"

namespace mfagen::cli {
namespace {

bool fits(const plan::KernelPlan& p, const RunRequest& r) {
  const spec::KernelSpec& s = p.spec;
  if (s.kind == spec::Kind::decode && r.seq_q > kMaxDecodeQueries) return false;
  return s.head_dim == r.head_dim && s.head_dim_v == r.head_dim_v && (s.gqa || r.heads_q == r.heads_kv) &&
         (s.mask != spec::MaskKind::none) == r.mask && s.alibi == r.alibi && s.softcap == r.softcap &&
         s.window == r.window && (s.kind == spec::Kind::backward) == r.backward &&
         (!r.dtype || s.dtype == *r.dtype) && (!r.causal || s.causal == *r.causal);
}

std::string describe_kernel(const spec::KernelSpec& s) {
  return fmt::format("{} ({} {}, head_dim {}, head_dim_v {}, causal {}, gqa {}, mask {}{}{}{})", s.name,
                     spec::to_string(s.kind), spec::to_string(s.dtype), s.head_dim, s.head_dim_v, spec::to_string(s.causal), s.gqa,
                     spec::to_string(s.mask), s.window ? ", window" : "", s.softcap ? ", softcap" : "",
                     s.alibi ? ", alibi" : "");
}

}  // namespace

std::string RunRequest::describe() const {
  std::string d = fmt::format("head_dim {}, head_dim_v {}, {} q heads over {} kv heads, {} queries", head_dim,
                              head_dim_v, heads_q, heads_kv, seq_q);
  if (dtype) d += fmt::format(", dtype {}", spec::to_string(*dtype));
  if (causal) d += fmt::format(", causal {}", spec::to_string(*causal));
  if (mask) d += ", a mask";
  if (alibi) d += ", ALiBi slopes";
  if (softcap) d += ", a softcap";
  if (window) d += ", a window";
  if (backward) d += ", dO (backward)";
  return d;
}

const plan::KernelPlan& select_kernel(const std::vector<plan::KernelPlan>& plans, const RunRequest& request,
                                      const std::string& spec_file) {
  if (request.seq_q <= kMaxDecodeQueries)
    for (const plan::KernelPlan& p : plans)
      if (p.spec.kind == spec::Kind::decode && fits(p, request)) return p;
  for (const plan::KernelPlan& p : plans)
    if (fits(p, request)) return p;
  std::string have;
  for (const plan::KernelPlan& p : plans) have += "\n  " + describe_kernel(p.spec);
  throw UserError(fmt::format("{} has no kernel for this call ({}); its kernels:{}", spec_file, request.describe(),
                              have));
}

}  // namespace mfagen::cli
