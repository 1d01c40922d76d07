#include "selftest/case_kernels.h"

#include "session/spec_library.h"
#include "spec/canonical.h"

namespace mfagen::selftest {

spec::KernelSpec forward_kernel_of(const spec::KernelSpec& backward) {
  spec::KernelSpec forward = session::forward_of(backward);
  forward.name = spec::derived_name(forward);
  return forward;
}

std::vector<spec::KernelSpec> kernels_of(const std::vector<SelftestCase>& cases) {
  std::vector<spec::KernelSpec> kernels;
  for (const SelftestCase& c : cases) kernels.push_back(c.kernel);
  for (const SelftestCase& c : cases)
    if (c.kernel.kind == spec::Kind::backward) kernels.push_back(forward_kernel_of(c.kernel));
  return kernels;
}

}  // namespace mfagen::selftest
