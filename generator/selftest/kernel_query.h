// The runtime's selection query for a call of a generated kernel, as an app
// would state it (dtype, head dims, causal mode, features, shape), and the
// check that selection answers it with that very kernel.
#pragma once

#include <string>

#include "mfagen/library.h"
#include "spec/kernel_spec.h"

namespace mfagen::selftest {

// `kind` forward also serves decode kernels (selection prefers one for
// seq_q <= 16); backward asks for the gradient kernels.
AttentionQuery query_for_kernel(const spec::KernelSpec& kernel, const AttentionShape& shape, KernelKind kind,
                                bool need_lse);

// library.select(query, device), which must be the kernel named `expected`
// (device: the backend's capabilities(); by default every kernel qualifies);
// otherwise std::runtime_error naming both (what runs would not be the
// kernel the case or bench names: a selection bug). Throws SelectionError
// when nothing fits.
const KernelEntry& select_named(const Library& library, const AttentionQuery& query, const std::string& expected,
                                const DeviceCapabilities& device = DeviceCapabilities::all());

}  // namespace mfagen::selftest
