#include "emit/emit.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

#include "emit/depfile.h"
#include "emit/manifest.h"
#include "io/atomic_file.h"

namespace mfagen::emit {
namespace {

namespace fs = std::filesystem;

// True if `path` is a regular file holding exactly `bytes`.
bool holds_exactly(const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) != bytes.size() || ec) return false;
  std::ifstream in(path, std::ios::binary);
  std::string existing{std::istreambuf_iterator<char>(in), {}};
  return !in.bad() && existing == bytes;
}

// Leaves identical files alone: an unchanged mtime means Ninja/Make do not
// recompile kernels that did not change.
void write_if_changed(const fs::path& path, std::string_view bytes, EmitResult& result) {
  if (holds_exactly(path, bytes)) {
    result.unchanged.push_back(path);
    return;
  }
  io::write_file_atomic(path, bytes);
  result.written.push_back(path);
}

void make_directory(const fs::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::system_error(ec, fmt::format("cannot create directory {}", dir.string()));
  if (!fs::is_directory(dir))
    throw std::system_error(std::make_error_code(std::errc::not_a_directory),
                            fmt::format("cannot create directory {}", dir.string()));
}

}  // namespace

EmitResult emit_kernels(const std::vector<plan::KernelPlan>& plans, const std::vector<std::string>& rendered_sources,
                        const fs::path& out_dir, const std::vector<fs::path>& spec_files,
                        std::optional<fs::path> depfile) {
  if (plans.size() != rendered_sources.size())
    throw std::invalid_argument(
        fmt::format("emit_kernels: {} plans but {} rendered sources", plans.size(), rendered_sources.size()));
  // Built before anything touches the disk: a failure here writes nothing.
  return emit_kernels(plans, rendered_sources, manifest_json(plans, rendered_sources), out_dir, spec_files, depfile);
}

EmitResult emit_kernels(const std::vector<plan::KernelPlan>& plans, const std::vector<std::string>& rendered_sources,
                        const std::string& manifest, const fs::path& out_dir, const std::vector<fs::path>& spec_files,
                        std::optional<fs::path> depfile) {
  if (plans.size() != rendered_sources.size())
    throw std::invalid_argument(
        fmt::format("emit_kernels: {} plans but {} rendered sources", plans.size(), rendered_sources.size()));
  const fs::path manifest_path = (out_dir / "manifest.json").lexically_normal();

  EmitResult result;
  make_directory(out_dir);
  for (size_t i = 0; i < plans.size(); ++i)
    write_if_changed(out_dir / kernel_file_name(plans[i]), rendered_sources[i], result);
  if (depfile) {
    make_directory(depfile->parent_path());
    write_if_changed(*depfile, depfile_text(manifest_path, spec_files), result);
  }
  // Last: its presence means every file it names is complete.
  write_if_changed(manifest_path, manifest, result);
  return result;
}

}  // namespace mfagen::emit
