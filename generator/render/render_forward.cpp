#include "render/render_forward.h"

#include <fmt/format.h>

#include "render/template_engine.h"
#include "spec/canonical.h"

namespace mfagen::render {
namespace {

std::string element_type(spec::DType t) {
  switch (t) {
    case spec::DType::float16: return "half";
    case spec::DType::bfloat16: return "bfloat";
    case spec::DType::float32: return "float";
  }
  return "float";
}

std::string number(uint32_t n) { return std::to_string(n); }

}  // namespace

std::string forward_template_version() { return template_version(kForwardTemplate); }

std::string forward_kernel_hash(const plan::KernelPlan& plan) {
  return spec::spec_hash(plan.spec, forward_template_version());
}

std::string render_forward(const plan::KernelPlan& plan) {
  const spec::KernelSpec& s = plan.spec;
  const bool causal = s.causal != spec::Causal::none;
  TemplateValues values = {
      {"entry", plan.entry},
      {"generator_version", std::string(MFAGEN_VERSION)},
      {"template_version", forward_template_version()},
      {"canonical_spec", spec::canonical_json(s)},
      {"hash", forward_kernel_hash(plan)},
      {"elem_type", element_type(s.dtype)},
      {"head_dim", number(s.head_dim)},
      {"head_dim_v", number(s.head_dim_v)},
      {"d_tiles", number(plan.d_tiles)},
      {"dv_tiles", number(plan.dv_tiles)},
      {"block_q", number(plan.block_q)},
      {"block_k", number(plan.block_k)},
      {"simdgroups", number(plan.simdgroups)},
      {"chunk", number(plan.chunk)},
      {"q_index", number(plan::kQIndex)},
      {"k_index", number(plan::kKIndex)},
      {"v_index", number(plan::kVIndex)},
      {"out_index", number(plan::kOutIndex)},
      {"lse_index", number(plan::kLseIndex)},
      {"params_index", number(plan::kParamsIndex)},
      {"lse", s.lse},
      {"gqa", s.gqa},
      {"causal", causal},
      {"causal_mode", std::string(spec::to_string(s.causal))},
      {"causal_offset", s.causal == spec::Causal::bottom_right ? "int(params.seq_k) - int(params.seq_q)" : "0"},
  };
  return render_template(kForwardTemplate, values);
}

}  // namespace mfagen::render
