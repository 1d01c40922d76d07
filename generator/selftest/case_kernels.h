// Which kernels a set of selftest cases runs: each case's own kernel, and
// for backward cases the forward kernel that gives them out and lse.
#pragma once

#include <vector>

#include "selftest/selftest_case.h"
#include "spec/kernel_spec.h"

namespace mfagen::selftest {

// The cases' kernels in case order, then the forwards of the backward cases
// (last, so that where a forward case has a kernel of the same features,
// selection's ties go to the case's own kernel by manifest order).
std::vector<spec::KernelSpec> kernels_of(const std::vector<SelftestCase>& cases);

// The forward kernel a backward case runs first: its features with lse,
// named as any forward kernel of those features, so that a forward case of
// the same features shares it.
spec::KernelSpec forward_kernel_of(const spec::KernelSpec& backward);

}  // namespace mfagen::selftest
