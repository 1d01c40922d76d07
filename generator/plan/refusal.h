// How the planner refuses a spec: a SpecError naming the spec's file, the
// JSON path of the field to change, the kernel and why.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "spec/kernel_spec.h"

namespace mfagen::plan {

[[noreturn]] inline void refuse(const spec::KernelSpec& s, std::string_view field, const std::string& message) {
  const std::string path =
      s.origin.json_path.empty() ? std::string(field) : fmt::format("{}.{}", s.origin.json_path, field);
  throw spec::SpecError(s.origin.file, path, fmt::format("{}: {}", s.name, message));
}

}  // namespace mfagen::plan
