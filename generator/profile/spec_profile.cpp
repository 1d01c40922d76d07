#include "profile/spec_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
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

// `--kv-dtype`: a quantized format names itself; a float dtype names k and
// v stored unquantized in that dtype (the spec's own).
bool stores_kv_as(const spec::KernelSpec& s, spec::KvDType kv) {
  if (spec::kv_quantized(kv)) return s.kv_dtype == kv;
  if (spec::kv_quantized(s.kv_dtype)) return false;
  switch (kv) {
    case spec::KvDType::float16: return s.dtype == spec::DType::float16;
    case spec::KvDType::bfloat16: return s.dtype == spec::DType::bfloat16;
    case spec::KvDType::float32: return s.dtype == spec::DType::float32;
    default: return true;
  }
}

bool all_equal(const std::vector<uint64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

// The first kernel of the set the filters allow: its features are the call's
// (a call of `mfagen run` states them through its inputs and options). A
// call with per-sequence lengths needs packed queries or a paged cache, and
// packed queries when the sequences' query counts differ.
const KernelEntry& first_candidate(const session::SpecLibrary& set, const SpecCall& call) {
  const bool per_sequence = !call.lengths.empty();
  const bool needs_varlen = per_sequence && !all_equal(call.lengths.q);
  for (const KernelEntry& k : set.library.kernels()) {
    const spec::KernelSpec& s = set.plan_of(k).spec;
    if (s.kind == spec::Kind::cache_append) continue;  // never serves an attention call
    if (call.dtype && s.dtype != *call.dtype) continue;
    if (call.causal && s.causal != *call.causal) continue;
    if (call.head_dim && s.head_dim != *call.head_dim) continue;
    if (call.head_dim_v && s.head_dim_v != *call.head_dim_v) continue;
    if (call.kv_dtype && !stores_kv_as(s, *call.kv_dtype)) continue;
    if (call.layout && s.layout != *call.layout) continue;
    if (call.kv_cache && s.kv_cache != *call.kv_cache) continue;
    if (per_sequence && s.layout != spec::Layout::varlen && s.kv_cache != spec::KvCache::paged) continue;
    if (needs_varlen && s.layout != spec::Layout::varlen) continue;
    return k;
  }
  std::string asked = "the dtype, causal mode, head dims and kv_dtype asked for";
  if (call.layout) asked += fmt::format(", layout {}", spec::to_string(*call.layout));
  if (call.kv_cache) asked += fmt::format(", kv_cache {}", spec::to_string(*call.kv_cache));
  if (needs_varlen)
    asked += " and packed queries (layout varlen: --seqlens-q gives the sequences different numbers of queries)";
  else if (per_sequence)
    asked += " and per-sequence lengths (--seqlens-q / --seqlens-k need layout varlen or kv_cache paged)";
  throw session::CallError(fmt::format("{} has no kernel with {}", call.spec_file, asked));
}

// The shape of a call: the options' shape, or with per-sequence lengths their count and longest.
plan::CostShape call_shape(const SpecCall& call) {
  plan::CostShape shape = call.shape;
  if (call.lengths.empty()) return shape;
  shape.batch = call.lengths.q.size();
  shape.seq_q = *std::max_element(call.lengths.q.begin(), call.lengths.q.end());
  shape.seq_k = *std::max_element(call.lengths.k.begin(), call.lengths.k.end());
  return shape;
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

std::string shape_text(const plan::KernelPlan& p, const plan::CostShape& s, const SequenceLengths* lengths) {
  std::string text =
      lengths ? fmt::format("B {}, Hq {}, Hkv {}, Sq per sequence {}, Sk per sequence {}, D {}", s.batch, s.heads_q,
                            s.heads_kv, lengths_text(lengths->q), lengths_text(lengths->k), p.spec.head_dim)
              : fmt::format("B {}, Hq {}, Hkv {}, Sq {}, Sk {}, D {}", s.batch, s.heads_q, s.heads_kv, s.seq_q, s.seq_k,
                            p.spec.head_dim);
  if (p.spec.head_dim_v != p.spec.head_dim) text += fmt::format(", Dv {}", p.spec.head_dim_v);
  text += fmt::format(", {}, causal {}", spec::to_string(p.spec.dtype), spec::to_string(p.spec.causal));
  if (p.spec.window) text += fmt::format(", window ({}, {})", s.window_left, s.window_right);
  if (spec::kv_quantized(p.spec.kv_dtype)) text += fmt::format(", kv {}", spec::to_string(p.spec.kv_dtype));
  if (p.spec.kv_cache == spec::KvCache::paged) text += fmt::format(", pages of {}", kSyntheticPageSize);
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
  const bool per_sequence = inputs && !inputs->lengths.empty();
  const SequenceLengths lengths = per_sequence ? inputs->lengths : uniform_lengths(shape);
  if (per_sequence && p.spec.layout != spec::Layout::varlen && !all_equal(lengths.q))
    throw session::CallError(fmt::format("--seqlens-q: kernel {} takes dense queries (B, Hq, Sq, D): every sequence "
                                         "needs the same number of queries, found {}",
                                         entry.name, lengths_text(lengths.q)));
  ForwardCall call = synthetic_call(p, shape, lengths);
  BatchPlan batch_plan;  // planned kernels: the work split `mfagen run` makes for these lengths
  try {
    plan_synthetic_batch(entry, call, lengths, batch_plan);
  } catch (const DispatchError& e) {
    throw session::CallError(e.what());
  }
  const DispatchPlan dispatch = session::dispatch_for(entry, call);

  std::map<uint32_t, std::vector<std::byte>> storage =
      synthetic_tensors(dispatch, p, shape, lengths, call.batch_plan);
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
  // Launches whose threadgroups differing only in y do alike work are
  // sampled across y (cpu::ProfileOptions::y_alike_entries): a planned
  // batch's work items are the same for every q head (grid (items, Hq); a
  // packed decode item's y are equal key slices, the last one shorter, so
  // its sampled counts are exact up to that shorter slice), a
  // split-K decode's splits the same for every kv head (grid (splits, Hkv x
  // row blocks, B)) and its combine the same for every q head.
  if (entry.info.planned_batches && call.batch_plan) profile.y_alike_entries = {dispatch.launches.front().entry};
  if (entry.info.decode && !entry.info.mask_mod)
    for (const KernelLaunch& l : dispatch.launches) profile.y_alike_entries.push_back(l.entry);
  // Counting only: the generated kernels are proven by the test suite with
  // every detector on; here the detectors would only slow the count down.
  const cpu::DispatchResult result =
      cpu::execute(*module, dispatch, tensors, cpu::Detectors{false, false, false, false}, profile);

  KernelWork work;
  work.name = entry.name;
  work.origin = origin;
  work.shape = shape_text(p, shape, per_sequence ? &lengths : nullptr);
  if (p.spec.kind == spec::Kind::backward) {
    work.useful_flops = plan::backward_cost(p, shape).flops;
  } else {
    const plan::ForwardCost cost = plan::forward_cost(p, shape, lengths.q, lengths.k);
    work.useful_flops = cost.flops;
    work.io_model_bytes = cost.min_device_bytes;
  }
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

KernelWork profile_call(const session::SpecLibrary& set, const SpecCall& call) {
  const plan::KernelPlan& first = set.plan_of(first_candidate(set, call));
  plan::CostShape shape = call_shape(call);
  SpecCall shaped = call;
  shaped.shape = shape;
  const session::CallRequest request = request_for(first, shaped);
  const KernelEntry& entry = session::select_kernel(set.library, request, call.spec_file);
  shape.heads_kv = request.heads_kv;
  return profile_entry(set, entry, shape, call.sample_threadgroups, call.spec_file, &call);
}

// A batch's prefills (more than one query) and decodes (one query), in
// batch order; a CallError unless it has both.
struct PrefillsAndDecodes {
  SequenceLengths prefills, decodes;
};
PrefillsAndDecodes split_prefills_and_decodes(const SequenceLengths& lengths) {
  if (lengths.empty())
    throw session::CallError("--separate: give the batch's sequences (--seqlens-q, --seqlens-k): the prefills "
                             "(more than one query) and the decodes (one query) are profiled as two calls");
  PrefillsAndDecodes split;
  for (size_t b = 0; b < lengths.q.size(); ++b) {
    SequenceLengths& part = lengths.q[b] > 1 ? split.prefills : split.decodes;
    part.q.push_back(lengths.q[b]);
    part.k.push_back(lengths.k[b]);
  }
  if (split.prefills.q.empty() || split.decodes.q.empty())
    throw session::CallError(fmt::format(
        "--separate: the batch needs prefills (sequences of more than one query) and decodes (one query each); "
        "--seqlens-q gives {} prefills and {} decodes",
        split.prefills.q.size(), split.decodes.q.size()));
  return split;
}

}  // namespace

KernelWork profile_spec_call(const SpecCall& call) {
  const session::SpecLibrary set = session::SpecLibrary::from_spec_files({call.spec_file});
  return profile_call(set, call);
}

void check_separable(const SequenceLengths& lengths) { split_prefills_and_decodes(lengths); }

KernelWork profile_separate_launches(const SpecCall& call) {
  const auto [prefills, decodes] = split_prefills_and_decodes(call.lengths);
  const session::SpecLibrary set = session::SpecLibrary::from_spec_files({call.spec_file});
  const spec::KernelSpec& one_launch = set.plan_of(first_candidate(set, call)).spec;
  if (one_launch.kv_cache != spec::KvCache::paged)
    throw session::CallError(fmt::format("--separate: kernel {} reads dense k and v; separate decode launches need a "
                                         "paged cache (kv_cache paged)",
                                         one_launch.name));
  SpecCall prefill = call;  // the one-launch call's features: packed queries on the paged cache
  prefill.lengths = prefills;
  prefill.layout = one_launch.layout;
  prefill.kv_cache = one_launch.kv_cache;
  SpecCall decode = call;  // dense queries, one per sequence, on the same cache
  decode.lengths = decodes;
  decode.layout = spec::Layout::dense;
  decode.kv_cache = one_launch.kv_cache;
  const KernelWork a = profile_call(set, prefill);
  const KernelWork b = profile_call(set, decode);
  KernelWork both;
  both.name = fmt::format("separate: {} + {}", a.name, b.name);
  both.origin = call.spec_file;
  both.shape = fmt::format("prefill {} + decode {}", a.shape, b.shape);
  both.useful_flops = a.useful_flops + b.useful_flops;
  both.io_model_bytes = a.io_model_bytes + b.io_model_bytes;
  both.launches = a.launches;
  both.launches.insert(both.launches.end(), b.launches.begin(), b.launches.end());
  return both;
}

KernelWork profile_plan_call(const plan::KernelPlan& kernel, const plan::CostShape& shape,
                             uint64_t sample_threadgroups) {
  const session::SpecLibrary set(std::vector<plan::KernelPlan>{kernel});
  return profile_entry(set, set.library.kernels().front(), shape, sample_threadgroups, kernel.spec.origin.file);
}

}  // namespace mfagen::profile
