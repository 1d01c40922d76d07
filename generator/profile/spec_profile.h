// `mfagen profile SPEC`: one call of a spec set, made as `mfagen run` makes
// it (plan, render, in-memory manifest, the runtime's selection and
// dispatch), on synthetic inputs, with the emitted MSL compiled for
// profiling and counted on the cpu backend (docs/profile.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"
#include "profile/kernel_work.h"
#include "profile/sequence_lengths.h"
#include "spec/kernel_spec.h"

namespace mfagen::profile {

struct SpecCall {
  std::string spec_file;
  plan::CostShape shape{1, 32, 8, 4096, 4096};
  // Narrow the set down, as `mfagen run --dtype/--causal` and the tensors' last dimensions do.
  std::optional<spec::DType> dtype;
  std::optional<spec::Causal> causal;
  std::optional<uint32_t> head_dim, head_dim_v;
  std::optional<spec::KvDType> kv_dtype;  // how k and v are stored (float16 etc. for unquantized), `--kv-dtype`
  std::optional<spec::Layout> layout;     // dense or packed (varlen) queries
  std::optional<spec::KvCache> kv_cache;  // dense or paged keys
  // Each sequence's own lengths (`--seqlens-q`, `--seqlens-k`; empty: the
  // shape's batch x seq_q and seq_k): the call is the batch they give, with
  // B their count and Sq, Sk their longest. Served by kernels with packed
  // queries (layout varlen) or a paged cache (with dense queries every
  // sequence has the same number of queries); kernels with planned batches
  // run the work split Library::plan_batch makes for the lengths, as
  // `mfagen run` does.
  SequenceLengths lengths;
  uint64_t sample_threadgroups = 0;  // per launch; 0: every threadgroup
  // score_mod / mask_mod kernels: captured tensors (NAME=FILE.npy) and scalars
  // (NAME=VALUE) as `mfagen run` takes them; without them the captured
  // tensors are zeros and the scalars 1 (a mask_mod then classifies blocks
  // as those zeros make it).
  std::vector<std::string> captures, scalars;
};

// Selects, plans and profiles the call; CallError if the set has no kernel for it.
KernelWork profile_spec_call(const SpecCall& call);

// The same batch as a server without one-launch mixed batches runs it:
// the prefills (sequences of more than one query) as one call of the
// queries' layout the one-launch call selects (packed on the paged cache),
// then the decodes (one query each) as a call with dense queries on the same
// cache (a decode kernel when the set has one), profiled in the same run.
// The result is one entry whose launches are both calls' in that order,
// so its prediction is their sum. Needs call.lengths with both kinds of
// sequence and a paged cache; sequences without queries are left out.
// CallError otherwise, naming what is missing.
KernelWork profile_separate_launches(const SpecCall& call);
// The checks of profile_separate_launches' lengths alone (prefills and
// decodes both present), to run before anything is counted.
void check_separable(const SequenceLengths& lengths);

// One planned kernel at a call shape (`mfagen explain --profile`); the shape
// must suit the kernel (decode: at most 16 queries; no GQA: Hkv = Hq).
KernelWork profile_plan_call(const plan::KernelPlan& kernel, const plan::CostShape& shape,
                             uint64_t sample_threadgroups);

}  // namespace mfagen::profile
