#include "plan/dispatch_info.h"

#include "spec/canonical.h"

namespace mfagen::plan {

KvFormat kv_format(const spec::KernelSpec& s) {
  switch (s.kv_dtype) {
    case spec::KvDType::q8_0: return KvFormat::q8_0;
    case spec::KvDType::q4_0: return KvFormat::q4_0;
    case spec::KvDType::fp8_e4m3: return KvFormat::fp8_e4m3;
    default: return KvFormat::elements;  // a float kv_dtype other than the spec's is refused by the planner
  }
}

uint64_t kv_key_bytes(const spec::KernelSpec& s) {
  const KvFormat kv = kv_format(s);
  return (kv_row_units(kv, s.head_dim) + kv_row_units(kv, s.head_dim_v)) * kv_unit_bytes(kv, spec::dtype_bytes(s.dtype));
}

ForwardKernelInfo forward_kernel_info(const KernelPlan& p) {
  static_assert(kQIndex == kForwardQ && kKIndex == kForwardK && kVIndex == kForwardV && kOutIndex == kForwardOut &&
                    kLseIndex == kForwardLse && kParamsIndex == kForwardParams && kMaskIndex == kForwardMask &&
                    kAlibiIndex == kForwardAlibi && kOutPartialIndex == kForwardOutPartial &&
                    kLsePartialIndex == kForwardLsePartial && kDOutIndex == kBackwardDOut &&
                    kDqIndex == kBackwardDq && kDkIndex == kBackwardDk && kDvIndex == kBackwardDv &&
                    kDRowsIndex == kBackwardDRows && kSinksIndex == kForwardSinks && kDSinksIndex == kBackwardDSinks &&
                    kCuSeqlensQIndex == kForwardCuSeqlensQ && kCuSeqlensKIndex == kForwardCuSeqlensK &&
                    kBlockTableIndex == kForwardBlockTable && kCacheSeqlensIndex == kForwardCacheSeqlens &&
                    kWorkItemsIndex == kForwardWorkItems && kMergeItemsIndex == kForwardMergeItems,
                "the planner's buffer table and the runtime's dispatch agree on indices");
  ForwardKernelInfo info;
  info.entry = p.entry;
  info.element_bytes = spec::dtype_bytes(p.spec.dtype);
  info.head_dim = p.spec.head_dim;
  info.head_dim_v = p.spec.head_dim_v;
  info.block_q = p.block_q;
  info.block_k = p.block_k;
  info.threads = p.threads;
  info.threadgroup_bytes = p.threadgroup_bytes;
  info.gqa = p.spec.gqa;
  info.lse = p.spec.lse;
  info.mask = p.spec.mask == spec::MaskKind::boolean    ? MaskInput::boolean
              : p.spec.mask == spec::MaskKind::additive ? MaskInput::additive
                                                        : MaskInput::none;
  info.window = p.spec.window;
  info.softcap = p.spec.softcap;
  info.alibi = p.spec.alibi;
  info.sinks = p.spec.sinks;
  info.varlen = p.spec.layout == spec::Layout::varlen;
  info.paged = p.spec.kv_cache == spec::KvCache::paged;
  info.kv_format = kv_format(p.spec);
  info.dropout = p.spec.dropout;
  info.score_mod = !p.spec.mods.score_mod.empty();
  info.mask_mod = !p.spec.mods.mask_mod.empty();
  info.mods_id = spec::mods_id(p.spec);
  const expr::MaskDependence mask_dependence = expr::mask_dependence(p.spec.mods);
  info.mask_by_batch = mask_dependence.batch;
  info.mask_by_head = mask_dependence.head;
  info.mod_scalars = uint32_t(p.spec.mods.scalars.size());
  for (const expr::CaptureDecl& c : p.spec.mods.captures) {
    CapturedTensor t;
    t.name = c.name;
    t.buffer = expr::capture_buffer_name(c.name);
    t.is_float = c.type == expr::CaptureType::float32;
    for (const expr::LinearForm& e : c.extents)
      t.extents.push_back({e.constant, e.size[0], e.size[1], e.size[2], e.size[3], e.size[4]});
    t.gradient_buffer = expr::capture_gradient_buffer_name(c.name);
    info.captures.push_back(std::move(t));
  }
  if (p.spec.kind == spec::Kind::backward)  // float tensors score_mod reads get their gradients
    for (size_t k : expr::gradient_captures(p.spec.mods)) info.captures[k].gradient = true;
  info.decode = p.spec.kind == spec::Kind::decode;
  info.combine_entry = p.combine_entry;
  info.backward = p.spec.kind == spec::Kind::backward;
  info.cache_append = p.spec.kind == spec::Kind::cache_append;
  info.planned_batches = planned_batches(p.spec);
  info.tensor_ops = p.tensor_ops;
  return info;
}

}  // namespace mfagen::plan
