#include "profile/spec_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <span>
#include <vector>

#include "mfagen/cpu/execute_dispatch.h"
#include "plan/dispatch_info.h"
#include "plan/kernel_plan.h"
#include "profile/latency_hiding.h"
#include "profile/launch_work.h"
#include "profile/synthetic_call.h"
#include "session/score_function_inputs.h"
#include "session/call_error.h"
#include "session/kernel_selection.h"
#include "session/spec_library.h"

namespace mfagen::profile {
namespace {

// The first kernel of the set the filters allow: its features are the call's
// (a call of `mfagen run` states them through its inputs and options).
const KernelEntry& first_candidate(const session::SpecLibrary& set, const SpecCall& call) {
  for (const KernelEntry& k : set.library.kernels()) {
    const spec::KernelSpec& s = set.plan_of(k).spec;
    if (call.dtype && s.dtype != *call.dtype) continue;
    if (call.causal && s.causal != *call.causal) continue;
    if (call.head_dim && s.head_dim != *call.head_dim) continue;
    if (call.head_dim_v && s.head_dim_v != *call.head_dim_v) continue;
    return k;
  }
  throw session::CallError(fmt::format("{} has no kernel with the dtype, causal mode and head dims asked for",
                                       call.spec_file));
}

session::CallRequest request_for(const plan::KernelPlan& p, const SpecCall& call) {
  session::CallRequest r;
  r.batch = call.shape.batch;
  r.heads_q = call.shape.heads_q;
  r.heads_kv = p.spec.gqa ? call.shape.heads_kv : call.shape.heads_q;
  r.seq_q = call.shape.seq_q;
  r.seq_k = call.shape.seq_k;
  r.head_dim = p.spec.head_dim;
  r.head_dim_v = p.spec.head_dim_v;
  r.dtype = p.spec.dtype;
  r.causal = p.spec.causal;
  r.has_mask = p.spec.mask != spec::MaskKind::none;
  r.alibi = p.spec.alibi;
  r.sinks = p.spec.sinks;
  r.varlen = p.spec.layout == spec::Layout::varlen;
  r.paged = p.spec.kv_cache == spec::KvCache::paged;
  r.kv_format = plan::kv_format(p.spec);
  r.dropout = p.spec.dropout;
  r.mods = !call.captures.empty() || !call.scalars.empty();
  r.softcap = p.spec.softcap;
  r.window = p.spec.window;
  r.backward = p.spec.kind == spec::Kind::backward;
  return r;
}

std::string shape_text(const plan::KernelPlan& p, const plan::CostShape& s) {
  std::string text = fmt::format("B {}, Hq {}, Hkv {}, Sq {}, Sk {}, D {}", s.batch, s.heads_q, s.heads_kv, s.seq_q,
                                 s.seq_k, p.spec.head_dim);
  if (p.spec.head_dim_v != p.spec.head_dim) text += fmt::format(", Dv {}", p.spec.head_dim_v);
  text += fmt::format(", {}, causal {}", spec::to_string(p.spec.dtype), spec::to_string(p.spec.causal));
  if (p.spec.window) text += fmt::format(", window ({}, {})", s.window_left, s.window_right);
  if (spec::kv_quantized(p.spec.kv_dtype)) text += fmt::format(", kv {}", spec::to_string(p.spec.kv_dtype));
  return text;
}

// What the cost model needs of a generated launch's structure (the same rule
// tools/profile_peers states for peers' kernels): a launch that multiplies
// fragments keeps the planner's fragment registers plus the scalar allowance
// and has one independent MMA chain per accumulator tile of its score block
// (row tiles x block_k / 8); launches without MMAs (the backward's
// preprocess, the decode combine) keep scalars only.
void add_structure(const plan::KernelPlan& p, LaunchWork& w) {
  const bool multiplies = w.op(Op::mma_f16_f32) + w.op(Op::mma_f16_f16) + w.op(Op::mma_bf16_f32) +
                              w.op(Op::mma_bf16_bf16) + w.op(Op::mma_f32_f32) + w.op(Op::tensor_mma_f16) +
                              w.op(Op::tensor_mma_f32) + w.op(Op::tensor_mma_i8) >
                          0;
  w.registers_per_thread = kScalarRegisterAllowance + (multiplies ? p.fragment_registers : 0);
  if (multiplies) w.mma_chains = std::max<uint32_t>(1, p.row_tiles * p.block_k / 8);
}

// Dispatches `entry` for the shape as the runtime would, runs it on synthetic
// inputs compiled for profiling, and collects the counts of every launch.
KernelWork profile_entry(const session::SpecLibrary& set, const KernelEntry& entry, const plan::CostShape& shape,
                         uint64_t sample_threadgroups, const std::string& origin, const SpecCall* inputs = nullptr) {
  const plan::KernelPlan& p = set.plan_of(entry);
  const DispatchPlan dispatch = session::dispatch_for(entry, synthetic_call(p, shape));

  std::map<uint32_t, std::vector<std::byte>> storage = synthetic_tensors(dispatch, p, shape);
  // The call's own score_mod / mask_mod inputs, when given: they decide which blocks mask_mod skips.
  const AttentionShape attention{shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q, shape.seq_k};
  if (inputs && !inputs->captures.empty()) {
    std::vector<std::vector<std::byte>> captures = session::read_captured_tensors(inputs->captures, p.spec, attention);
    for (size_t i = 0; i < captures.size(); ++i) storage[kForwardFirstCapture + uint32_t(i)] = std::move(captures[i]);
  }
  if (inputs && !inputs->scalars.empty()) {
    const std::vector<float> scalars = session::read_scalars(inputs->scalars, p.spec);
    storage[kForwardModScalars] = std::vector<std::byte>(reinterpret_cast<const std::byte*>(scalars.data()),
                                                         reinterpret_cast<const std::byte*>(scalars.data() + scalars.size()));
  }
  std::map<uint32_t, std::span<std::byte>> tensors;
  for (auto& [index, bytes] : storage) tensors[index] = bytes;

  cpu::CompileOptions options;
  options.profile = true;
  const auto module = cpu::compile(set.source_of(entry), entry.file, options);
  cpu::ProfileOptions profile;
  profile.enabled = true;
  profile.sample_threadgroups = sample_threadgroups;
  if (entry.info.mask_mod) profile.unsampled_entries = {entry.entries.front()};  // the block classes, whole
  // Counting only: the generated kernels are proven by the test suite with
  // every detector on; here the detectors would only slow the count down.
  const cpu::DispatchResult result =
      cpu::execute(*module, dispatch, tensors, cpu::Detectors{false, false, false, false}, profile);

  KernelWork work;
  work.name = entry.name;
  work.origin = origin;
  work.shape = shape_text(p, shape);
  work.useful_flops = p.spec.kind == spec::Kind::backward ? plan::backward_cost(p, shape).flops
                                                          : plan::forward_cost(p, shape).flops;
  std::vector<std::pair<uint32_t, uint64_t>> buffer_sizes;
  for (const BufferRequirement& b : dispatch.buffers) buffer_sizes.emplace_back(b.index, b.bytes);
  for (size_t i = 0; i < dispatch.launches.size(); ++i) {
    const KernelLaunch& l = dispatch.launches[i];
    const LaunchShape launch{l.entry,
                             {l.threadgroups[0], l.threadgroups[1], l.threadgroups[2]},
                             {l.threads_per_threadgroup[0], l.threads_per_threadgroup[1], l.threads_per_threadgroup[2]},
                             buffer_sizes};
    work.launches.push_back(to_launch_work(launch, *result.launches.at(i).profile));
    add_structure(p, work.launches.back());
  }
  return work;
}

}  // namespace

KernelWork profile_spec_call(const SpecCall& call) {
  const session::SpecLibrary set = session::SpecLibrary::from_spec_files({call.spec_file});
  const plan::KernelPlan& first = set.plan_of(first_candidate(set, call));
  const session::CallRequest request = request_for(first, call);
  const KernelEntry& entry = session::select_kernel(set.library, request, call.spec_file);
  plan::CostShape shape = call.shape;
  shape.heads_kv = request.heads_kv;
  return profile_entry(set, entry, shape, call.sample_threadgroups, call.spec_file, &call);
}

KernelWork profile_plan_call(const plan::KernelPlan& kernel, const plan::CostShape& shape,
                             uint64_t sample_threadgroups) {
  const session::SpecLibrary set(std::vector<plan::KernelPlan>{kernel});
  return profile_entry(set, set.library.kernels().front(), shape, sample_threadgroups, kernel.spec.origin.file);
}

}  // namespace mfagen::profile
