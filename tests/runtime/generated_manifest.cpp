#include "generated_manifest.h"

#include "emit/emit.h"
#include "emit/manifest.h"
#include "render/render_forward.h"
#include "spec/spec_parser.h"

namespace mfagen::test {
namespace {

struct Generated {
  std::vector<plan::KernelPlan> plans;
  std::vector<std::string> sources;
};

Generated generate(const std::string& spec_json) {
  Generated g;
  for (const spec::KernelSpec& s : spec::parse_spec_text(spec_json, "test.json")) {
    g.plans.push_back(plan::plan_kernel(s));
    g.sources.push_back(render::render_forward(g.plans.back()));
  }
  return g;
}

}  // namespace

std::string manifest_for(const std::string& spec_json) {
  const Generated g = generate(spec_json);
  return emit::manifest_json(g.plans, g.sources);
}

std::filesystem::path generate_into(const std::string& spec_json, const std::filesystem::path& dir) {
  const Generated g = generate(spec_json);
  emit::emit_kernels(g.plans, g.sources, dir, {}, std::nullopt);
  return dir / "manifest.json";
}

}  // namespace mfagen::test
