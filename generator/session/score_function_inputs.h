// The inputs of a call to a score_mod / mask_mod kernel (DESIGN.md section
// 13): its captured tensors, read from .npy files given as NAME=FILE, and its
// runtime scalars, given as NAME=VALUE, as `mfagen run` and future bindings
// take them. Each is checked against what the kernel declares for the call's
// shape, so that the kernel's proven-in-bounds reads stay in bounds.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "mfagen/forward_dispatch.h"
#include "spec/kernel_spec.h"

namespace mfagen::session {

// Each captured tensor of `spec` (in its order) from "name=file.npy"
// arguments: <f4 for float32 tensors, <i4 for int32 ones, of exactly the
// shape its extents give for `shape`. Throws CallError naming the option, the
// file and what was expected (a missing, unknown or repeated name, a wrong
// dtype or shape).
std::vector<std::vector<std::byte>> read_captured_tensors(const std::vector<std::string>& arguments,
                                                          const spec::KernelSpec& spec, const AttentionShape& shape);

// The scalars of `spec` (in its order) from "name=value" arguments (finite
// numbers). Throws CallError for a missing, unknown or repeated name, or a
// value that is not a finite float32.
std::vector<float> read_scalars(const std::vector<std::string>& arguments, const spec::KernelSpec& spec);

}  // namespace mfagen::session
