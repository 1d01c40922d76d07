// A selftest case (generator/selftest) as buffers for one kernel of it: the
// case's seeded inputs (selftest::make_inputs) bound by index, with out and
// lse of the same math in the input dtype for a backward kernel, and every
// output zero-filled at its planned size. For the Metal backend tests, which
// compare the bytes each backend and path writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "mfagen/backend.h"
#include "mfagen/library.h"
#include "selftest/selftest_case.h"

namespace mfagen::test {

struct AttentionCall {
  ForwardCall call;
  std::map<uint32_t, std::vector<std::byte>> inputs;  // by buffer index; outputs zero-filled
};

AttentionCall make_call(const selftest::SelftestCase& c, const KernelEntry& kernel);

// A case for `kernel` at `shape` with the selftest's default runtime values.
selftest::SelftestCase case_for(const spec::KernelSpec& kernel, const AttentionShape& shape);

// Spans into `storage`, by buffer index.
TensorMap bind(std::map<uint32_t, std::vector<std::byte>>& storage);

}  // namespace mfagen::test
