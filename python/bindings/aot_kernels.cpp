#include "aot_kernels.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "render/render_forward.h"
#include "session/call_error.h"
#include "spec/canonical.h"
#include "spec/spec_parser.h"

namespace mfagen::python {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw session::CallError(fmt::format("cannot read {}", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::map<std::string, AotKernel> load_aot_kernels(const std::filesystem::path& manifest) {
  const nlohmann::json root = nlohmann::json::parse(read_file(manifest), nullptr, false);
  if (root.is_discarded() || !root.contains("kernels") || !root["kernels"].is_array())
    throw session::CallError(fmt::format("{}: not an mfagen manifest (no \"kernels\" list)", manifest.string()));
  std::map<std::string, AotKernel> kernels;
  for (const nlohmann::json& entry : root["kernels"]) {
    nlohmann::json spec_object = entry.value("spec", nlohmann::json::object());
    for (auto it = spec_object.begin(); it != spec_object.end();)  // null: the default (tiles from the planner)
      it = it->is_null() ? spec_object.erase(it) : std::next(it);
    const std::vector<spec::KernelSpec> specs = spec::parse_spec_text(spec_object.dump(), manifest.string());
    const std::string name = spec::derived_name(specs.front());  // before planning fills in the tiles
    AotKernel k{plan::plan_kernel(specs.front()), {}, manifest};
    const std::string recorded = entry.value("hash", "");
    if (render::forward_kernel_hash(k.plan) != recorded)
      throw session::CallError(fmt::format(
          "{}: kernel {} has hash {} but this mfagen plans it as {}: the manifest comes from another generator "
          "version; regenerate it with this one",
          manifest.string(), k.plan.entry, recorded, render::forward_kernel_hash(k.plan)));
    k.source = read_file(manifest.parent_path() / entry.value("file", ""));
    kernels.emplace(name, std::move(k));
  }
  return kernels;
}

}  // namespace mfagen::python
