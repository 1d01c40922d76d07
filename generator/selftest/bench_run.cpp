#include "selftest/bench_run.h"

#include <algorithm>
#include <exception>
#include <map>
#include <span>

#include "profile/cost_model.h"
#include "profile/spec_profile.h"
#include "profile/synthetic_call.h"
#include "selftest/generated_kernels.h"
#include "selftest/kernel_query.h"

namespace mfagen::selftest {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void time_and_predict(const BenchCase& c, const GeneratedKernels& kernels, Backend& backend,
                      const BenchOptions& options, BenchResult& result) {
  const plan::CostShape& shape = shape_of(c, options.size);
  const AttentionShape call_shape{shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q, shape.seq_k};
  const bool backward = c.kernel.kind == spec::Kind::backward;
  const KernelEntry& kernel = select_named(
      kernels.library(),
      query_for_kernel(c.kernel, call_shape, backward ? KernelKind::backward : KernelKind::forward, c.kernel.lse),
      c.kernel.name, backend.capabilities());
  const plan::KernelPlan& plan = kernels.plan_of(kernel);
  result.kernel = kernel.name;
  const profile::KernelWork work = profile::profile_plan_call(plan, shape, options.sample_threadgroups);
  result.shape = work.shape;
  result.predicted_seconds = profile::predict(options.chip, work).seconds;

  // The call and inputs the profile counts, so both sides see the same work.
  const profile::SequenceLengths lengths = profile::uniform_lengths(shape);
  ForwardCall call = profile::synthetic_call(plan, shape, lengths);
  BatchPlan batch_plan;  // planned kernels: the work split the profile counts too
  profile::plan_synthetic_batch(kernel, call, lengths, batch_plan);
  const DispatchPlan dispatch = Library::plan(kernel, call);
  result.launches = uint32_t(dispatch.launches.size());
  std::map<uint32_t, std::vector<std::byte>> storage =
      profile::synthetic_tensors(dispatch, plan, shape, lengths, call.batch_plan);
  TensorMap tensors;
  for (auto& [index, bytes] : storage) tensors[index] = bytes;
  backend.run(kernels.library(), kernel, dispatch, tensors);  // warm-up: compilation, pipeline state
  for (uint32_t i = 0; i < std::max<uint32_t>(options.repeats, 1); ++i)
    result.seconds.push_back(backend.run(kernels.library(), kernel, dispatch, tensors).seconds);
  result.median_seconds = median(result.seconds);
  result.best_seconds = *std::min_element(result.seconds.begin(), result.seconds.end());
}

}  // namespace

std::vector<BenchResult> run_bench(const std::vector<BenchCase>& cases, Backend& backend, const BenchOptions& options,
                                   const std::function<void(const BenchResult&)>& on_result) {
  std::vector<spec::KernelSpec> specs;
  for (const BenchCase& c : cases) specs.push_back(c.kernel);
  const GeneratedKernels kernels(specs, "mfagen-bench-");
  std::vector<BenchResult> results;
  for (const BenchCase& c : cases) {
    BenchResult& r = results.emplace_back();
    r.name = c.name;
    r.model = c.model;
    try {
      time_and_predict(c, kernels, backend, options, r);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    if (on_result) on_result(r);
  }
  return results;
}

}  // namespace mfagen::selftest
