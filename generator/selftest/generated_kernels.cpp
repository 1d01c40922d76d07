#include "selftest/generated_kernels.h"

#include <algorithm>

#include "plan/kernel_plan.h"

namespace mfagen::selftest {
namespace {

std::vector<plan::KernelPlan> plan_each_once(const std::vector<spec::KernelSpec>& specs) {
  std::vector<plan::KernelPlan> plans;
  for (const spec::KernelSpec& s : specs)
    if (std::none_of(plans.begin(), plans.end(), [&](const plan::KernelPlan& p) { return p.spec.name == s.name; }))
      plans.push_back(plan::plan_kernel(s));
  return plans;
}

}  // namespace

GeneratedKernels::GeneratedKernels(const std::vector<spec::KernelSpec>& specs, std::string_view prefix)
    : directory_(prefix), set_(plan_each_once(specs), directory_.path()) {}

}  // namespace mfagen::selftest
