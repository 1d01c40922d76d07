#include "render/render_forward.h"

#include <fmt/format.h>

#include <vector>

#include "expr/score_functions.h"
#include "render/render_cache_append.h"
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

// The score formula and visibility rule of the kernel, for its header comment.
std::string score_formula(const spec::KernelSpec& s) {
  std::string f = s.softcap ? "softcap * tanh(scale * <q_i, k_j> / softcap)" : "scale * <q_i, k_j>";
  if (s.alibi) f += " - slope[h] * |i + offset - j|";
  if (!s.mods.score_mod.empty()) f = "score_mod(" + f + ", b, h, i, j)";
  if (s.mask == spec::MaskKind::additive) f += " + mask[b,h,i,j]";
  return f;
}

std::string visibility_rule(const spec::KernelSpec& s) {
  std::vector<std::string> rules;
  if (s.causal != spec::Causal::none) rules.push_back("j <= i + offset");
  if (s.window) rules.push_back("i + offset - left <= j <= i + offset + right");
  if (s.mask == spec::MaskKind::boolean) rules.push_back("mask[b,h,i,j]");
  if (s.mask == spec::MaskKind::additive) rules.push_back("mask[b,h,i,j] != -inf");
  if (!s.mods.mask_mod.empty()) rules.push_back("mask_mod(b, h, i, j)");
  std::string r;
  for (const std::string& rule : rules) r += (r.empty() ? "" : " and ") + rule;
  return r;
}

}  // namespace

std::string forward_template_version() { return template_version(kForwardTemplate); }

const char* kernel_template(const plan::KernelPlan& plan) {
  if (plan.spec.kind == spec::Kind::backward) return kBackwardTemplate;
  if (plan.spec.kind == spec::Kind::cache_append) return kCacheAppendTemplate;
  return plan.tensor_ops ? kTensorOpsForwardTemplate : kForwardTemplate;
}

std::string kernel_template_version(const plan::KernelPlan& plan) { return template_version(kernel_template(plan)); }

std::string forward_kernel_hash(const plan::KernelPlan& plan) {
  return spec::spec_hash(plan.spec, kernel_template_version(plan));
}

std::string render_forward(const plan::KernelPlan& plan) {
  if (plan.spec.kind == spec::Kind::cache_append) return render_cache_append(plan);
  const char* name = kernel_template(plan);
  const spec::KernelSpec& s = plan.spec;
  const bool causal = s.causal != spec::Causal::none;
  const bool has_offset = causal || s.window || s.alibi;
  const bool mask = s.mask != spec::MaskKind::none;
  const std::string rule = visibility_rule(s);
  const expr::MaskDependence mask_dependence = expr::mask_dependence(s.mods);
  // TensorOps kernels: P V's left operand is 16-bit P in threadgroup memory
  // beside 16-bit K/V tiles; float32 otherwise (float32 or dequantized tiles).
  const bool p_in_tile = !spec::kv_quantized(s.kv_dtype) && s.dtype != spec::DType::float32;
  TemplateValues values = {
      {"entry", plan.entry},
      {"generator_version", std::string(MFAGEN_VERSION)},
      {"template_version", template_version(name)},
      {"canonical_spec", spec::canonical_json(s)},
      {"hash", forward_kernel_hash(plan)},
      {"score_formula", score_formula(s)},
      {"visibility_rule", rule},
      {"has_visibility_rule", !rule.empty()},  // mustache treats "" as true
      {"elem_type", element_type(s.dtype)},
      // K and V as staged: their own type, or float32 (KernelPlan::staged_bytes).
      {"tile_type", plan.staged_bytes == 4 ? "float" : element_type(s.dtype)},
      {"p_in_tile", p_in_tile},
      {"p_type", p_in_tile ? element_type(s.dtype) : "float"},
      {"head_dim", number(s.head_dim)},
      {"head_dim_v", number(s.head_dim_v)},
      {"d_tiles", number(plan.d_tiles)},
      {"dv_tiles", number(plan.dv_tiles)},
      {"block_q", number(plan.block_q)},
      {"block_k", number(plan.block_k)},
      {"simdgroups", number(plan.simdgroups)},
      {"key_groups", number(plan.key_groups)},
      {"key_groups_split", plan.key_groups > 1},
      {"merge_tiles", number(plan.merge_tiles)},
      {"chunk", number(plan.chunk)},
      {"q_index", number(plan::kQIndex)},
      {"k_index", number(plan::kKIndex)},
      {"v_index", number(plan::kVIndex)},
      {"out_index", number(plan::kOutIndex)},
      {"lse_index", number(plan::kLseIndex)},
      {"params_index", number(plan::kParamsIndex)},
      {"mask_index", number(plan::kMaskIndex)},
      {"alibi_index", number(plan::kAlibiIndex)},
      {"sinks_index", number(plan::kSinksIndex)},
      {"d_sinks_index", number(plan::kDSinksIndex)},
      {"cu_seqlens_q_index", number(plan::kCuSeqlensQIndex)},
      {"cu_seqlens_k_index", number(plan::kCuSeqlensKIndex)},
      {"block_table_index", number(plan::kBlockTableIndex)},
      {"cache_seqlens_index", number(plan::kCacheSeqlensIndex)},
      {"lse", s.lse},
      {"gqa", s.gqa},
      {"causal", causal},
      {"causal_mode", std::string(spec::to_string(s.causal))},
      {"has_offset", has_offset},
      {"offset_rules", causal || s.window},  // visibility rules that measure the distance to the diagonal
      // seq_q, seq_k: the kernel's locals (a varlen sequence's own lengths).
      {"offset_expr", s.causal == spec::Causal::top_left ? "0" : "int(seq_k) - int(seq_q)"},
      {"decode", s.kind == spec::Kind::decode},
      {"planned", plan::planned_batches(s)},  // a planned batch's work items (Library::plan_batch)
      {"writes_partials", s.kind == spec::Kind::decode || plan::planned_batches(s)},
      {"work_items_index", number(plan::kWorkItemsIndex)},
      {"merge_items_index", number(plan::kMergeItemsIndex)},
      {"simdgroup_matrix", !plan.tensor_ops},  // products by simdgroup_matrix MMAs (not matmul2d)
      {"stepped_rows", plan::plain_forward_staging(s)},  // K/V row pointers stepped per key block
      {"resident", plan.resident_tiles},
      {"out_partial_index", number(plan::kOutPartialIndex)},
      {"lse_partial_index", number(plan::kLsePartialIndex)},
      {"d_out_index", number(plan::kDOutIndex)},
      {"dq_index", number(plan::kDqIndex)},
      {"dk_index", number(plan::kDkIndex)},
      {"dv_index", number(plan::kDvIndex)},
      {"d_rows_index", number(plan::kDRowsIndex)},
      {"window", s.window},
      {"softcap", s.softcap},
      {"alibi", s.alibi},
      {"sinks", s.sinks},
      {"varlen", s.layout == spec::Layout::varlen},
      {"paged", s.kv_cache == spec::KvCache::paged},
      // Packed keys (cu_seqlens_k): varlen on dense k and v; a paged cache has its own lengths.
      {"packed_k", s.layout == spec::Layout::varlen && s.kv_cache != spec::KvCache::paged},
      // k and v: in elem_t, or quantized (dequantized while staged).
      {"kv_type", spec::kv_quantized(s.kv_dtype) ? "kv_t" : "elem_t"},
      {"kv_dtype", std::string(spec::to_string(s.kv_dtype))},
      {"kv_quantized", spec::kv_quantized(s.kv_dtype)},
      {"kv_q8_0", s.kv_dtype == spec::KvDType::q8_0},
      {"kv_q4_0", s.kv_dtype == spec::KvDType::q4_0},
      {"kv_fp8", s.kv_dtype == spec::KvDType::fp8_e4m3},
      {"dropout", s.dropout},
      // fp8 codes are decoded at 2^-8 of their value (see the template).
      {"k_unit", s.kv_dtype == spec::KvDType::fp8_e4m3 ? "params.k_scale * 256.0f" : "1.0f"},
      {"v_unit", s.kv_dtype == spec::KvDType::fp8_e4m3 ? "params.v_scale * 256.0f" : "1.0f"},
      {"mask", mask},
      // score_mod / mask_mod (DESIGN.md section 13): generated functions, and
      // the parameters and inputs that feed them (indented as the template's
      // signatures, aligned under "kernel void {{entry}}(").
      {"mods", s.mods.any()},
      {"score_mod", !s.mods.score_mod.empty()},
      {"mask_mod", !s.mods.mask_mod.empty()},
      // Block classes (the _blocks kernel): every mask_mod kernel but decode's, which decides pair by pair.
      {"mask_mod_blocks", !s.mods.mask_mod.empty() && s.kind != spec::Kind::decode},
      {"natural_scale", s.softcap || !s.mods.score_mod.empty()},
      {"score_slope", s.softcap || !s.mods.score_mod.empty()},  // backward: dS times d s / d z
      {"score_batch", mask || s.mods.any()},
      {"mod_functions", s.mods.any() ? expr::msl_functions(s.mods, s.kind == spec::Kind::backward) : std::string()},
      {"mod_parameters", !s.mods.scalars.empty() || !s.mods.captures.empty()},
      {"mod_parameters_forward", expr::msl_parameters(s.mods, std::string(22, ' '))},
      {"mod_parameters_dkdv", expr::msl_parameters(s.mods, std::string(27, ' '))},
      {"mod_parameters_blocks", expr::msl_parameters(s.mods, std::string(29, ' '))},
      {"block_classes_index", number(expr::kBlockClassesIndex)},
      {"mask_by_batch_value", mask_dependence.batch ? "true" : "false"},
      {"mask_by_head_value", mask_dependence.head ? "true" : "false"},
      {"capture_grads", s.kind == spec::Kind::backward && !expr::gradient_captures(s.mods).empty()},
      {"capture_grad_partials_index", number(expr::kCaptureGradPartialsIndex)},
      {"capture_grad_parameters", expr::msl_capture_gradient_parameters(s.mods, std::string(32, ' '))},
      {"capture_grad_arguments", expr::msl_capture_gradient_arguments(s.mods)},
      {"mod_parameters_dcaptures", expr::msl_parameters(s.mods, std::string(32, ' '))},
      {"mod_parameters_dq", expr::msl_parameters(s.mods, std::string(25, ' '))},
      {"mod_inputs", s.mods.any() ? expr::msl_inputs(s.mods) : std::string()},
      // Scores without additive terms stay raw dots until the exp2 (forward).
      {"plain_scores", !s.softcap && !s.alibi && !mask && !s.mods.any()},
      // float32 promises its band at large logits: dot products summed per 8-wide slice.
      {"precise_scores", s.dtype == spec::DType::float32},
      {"elem_is_float", s.dtype == spec::DType::float32},
      {"mask_bool", s.mask == spec::MaskKind::boolean},
      {"mask_additive", s.mask == spec::MaskKind::additive},
      {"mask_type", s.mask == spec::MaskKind::boolean ? "bool" : "elem_t"},
      {"mask_bits_type", s.dtype == spec::DType::float32 ? "uint" : "ushort"},
      {"mask_negative_infinity", s.dtype == spec::DType::float32    ? "0xff800000u"
                                 : s.dtype == spec::DType::bfloat16 ? "0xff80"
                                                                    : "0xfc00"},
  };
  return render_template(name, values);
}

}  // namespace mfagen::render
