// Whether a user-given kernel name can be the name of a kernel function in
// generated MSL (and of the .metal file and manifest entry named after it).
#pragma once

#include <string>
#include <string_view>

namespace mfagen::spec {

inline constexpr size_t kMaxNameLength = 96;

// "" when `name` is usable; otherwise the reason, worded "expected ...,
// found ..." like every spec error.
std::string metal_identifier_problem(std::string_view name);

}  // namespace mfagen::spec
