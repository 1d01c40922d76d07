// The Emit stage (DESIGN.md section 1): the last step of `mfagen generate`.
// Writes one <name>.metal per kernel, the optional depfile, then
// manifest.json, so that a manifest on disk always describes complete files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "plan/kernel_plan.h"

namespace mfagen::emit {

struct EmitResult {
  std::vector<std::filesystem::path> written;    // created or changed
  std::vector<std::filesystem::path> unchanged;  // already held these exact bytes: not touched
};

// Creates out_dir (and the depfile's directory) as needed. Every file goes
// through io::write_file_atomic; a file whose bytes are already identical is
// left alone so its mtime does not trigger rebuilds. The caller has planned
// and rendered every kernel before calling: nothing may fail half-way for a
// reason in the specs. Throws std::system_error for I/O failures.
EmitResult emit_kernels(const std::vector<plan::KernelPlan>& plans, const std::vector<std::string>& rendered_sources,
                        const std::filesystem::path& out_dir, const std::vector<std::filesystem::path>& spec_files,
                        std::optional<std::filesystem::path> depfile);
// The same with manifest_json(plans, rendered_sources) already made (the
// check stage needs it first; a thousand kernels take a noticeable time).
EmitResult emit_kernels(const std::vector<plan::KernelPlan>& plans, const std::vector<std::string>& rendered_sources,
                        const std::string& manifest, const std::filesystem::path& out_dir,
                        const std::vector<std::filesystem::path>& spec_files,
                        std::optional<std::filesystem::path> depfile);

}  // namespace mfagen::emit
