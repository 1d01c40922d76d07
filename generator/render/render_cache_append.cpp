// Render stage for cache_append kernels (templates/cache_append.metal.mustache).
#include "render/render_cache_append.h"

#include "render/render_forward.h"
#include "render/template_engine.h"
#include "spec/canonical.h"

namespace mfagen::render {

std::string render_cache_append(const plan::KernelPlan& plan) {
  const spec::KernelSpec& s = plan.spec;
  const TemplateValues values = {
      {"entry", plan.entry},
      {"generator_version", std::string(MFAGEN_VERSION)},
      {"template_version", template_version(kCacheAppendTemplate)},
      {"canonical_spec", spec::canonical_json(s)},
      {"hash", forward_kernel_hash(plan)},
      {"elem_type", s.dtype == spec::DType::float16    ? "half"
                    : s.dtype == spec::DType::bfloat16 ? "bfloat"
                                                       : "float"},
      {"head_dim", std::to_string(s.head_dim)},
      {"head_dim_v", std::to_string(s.head_dim_v)},
      {"varlen", s.layout == spec::Layout::varlen},
      {"paged", s.kv_cache == spec::KvCache::paged},
      {"kv_q8_0", s.kv_dtype == spec::KvDType::q8_0},
      {"kv_q4_0", s.kv_dtype == spec::KvDType::q4_0},
      {"kv_fp8", s.kv_dtype == spec::KvDType::fp8_e4m3},
      {"kv_elements", !spec::kv_quantized(s.kv_dtype)},
      {"k_index", std::to_string(plan::kKIndex)},
      {"v_index", std::to_string(plan::kVIndex)},
      {"params_index", std::to_string(plan::kParamsIndex)},
      {"k_new_index", std::to_string(plan::kAppendNewKIndex)},
      {"v_new_index", std::to_string(plan::kAppendNewVIndex)},
      {"cu_seqlens_k_index", std::to_string(plan::kCuSeqlensKIndex)},
      {"block_table_index", std::to_string(plan::kBlockTableIndex)},
      {"cache_seqlens_index", std::to_string(plan::kCacheSeqlensIndex)},
  };
  return render_template(kCacheAppendTemplate, values);
}

}  // namespace mfagen::render
