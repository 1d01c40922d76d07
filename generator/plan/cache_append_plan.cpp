#include "plan/cache_append_plan.h"

#include <fmt/format.h>

#include "plan/refusal.h"

namespace mfagen::plan {
namespace {

void refuse_attention_fields(const spec::KernelSpec& s) {
  const auto attention_only = [&](bool set, std::string_view field) {
    if (set)
      refuse(s, field,
             fmt::format("{} is an attention feature; a cache_append kernel only writes new keys and values into "
                         "the cache (leave the field out)",
                         field));
  };
  attention_only(s.causal != spec::Causal::none, "causal");
  attention_only(s.mask != spec::MaskKind::none, "mask");
  attention_only(s.window, "window");
  attention_only(s.softcap, "softcap");
  attention_only(s.alibi, "alibi");
  attention_only(s.sinks, "sinks");
  attention_only(s.dropout, "dropout");
  attention_only(s.mods.any(), s.mods.score_mod.empty() ? "mask_mod" : "score_mod");
  attention_only(s.tiles.has_value(), "tiles");
  attention_only(s.target == spec::Target::apple10, "target");
}

}  // namespace

KernelPlan plan_cache_append(const spec::KernelSpec& s) {
  refuse_attention_fields(s);
  if (s.kv_dtype != spec::KvDType::as_dtype && !spec::kv_quantized(s.kv_dtype))
    refuse(s, "kv_dtype",
           fmt::format("the cache is stored in the spec's dtype ({}) unless quantized: use kv_dtype q8_0, q4_0 or "
                       "fp8_e4m3, or leave the field out",
                       spec::to_string(s.dtype)));
  if (spec::kv_in_blocks(s.kv_dtype) && (s.head_dim % 32 != 0 || s.head_dim_v % 32 != 0))
    refuse(s, "kv_dtype",
           fmt::format("{} stores blocks of 32 values along the head dim: head_dim ({}) and head_dim_v ({}) must be "
                       "multiples of 32",
                       spec::to_string(s.kv_dtype), s.head_dim, s.head_dim_v));
  KernelPlan p;
  p.spec = s;
  p.entry = s.name;
  p.entries = {s.name};
  p.simdgroups = 1;
  p.threads = kSimdWidth;
  // In the manifest's terms: a threadgroup takes one new row (block_q) and 32 of its values (block_k).
  p.block_q = 1;
  p.block_k = kAppendChunk;
  const std::string elem(s.dtype == spec::DType::float16    ? "half"
                         : s.dtype == spec::DType::bfloat16 ? "bfloat"
                                                            : "float");
  p.buffers = {
      {kKIndex, "k", "device " + kv_storage_type(s) + "*", true},
      {kVIndex, "v", "device " + kv_storage_type(s) + "*", true},
      {kParamsIndex, "params", "constant AppendParams&", false},
      {kAppendNewKIndex, "k_new", "device const " + elem + "*", false},
      {kAppendNewVIndex, "v_new", "device const " + elem + "*", false},
  };
  if (s.layout == spec::Layout::varlen) p.buffers.push_back({kCuSeqlensKIndex, "cu_seqlens_k", "device const int*", false});
  if (s.kv_cache == spec::KvCache::paged)
    p.buffers.push_back({kBlockTableIndex, "block_table", "device const int*", false});
  p.buffers.push_back({kCacheSeqlensIndex, "cache_seqlens", "device const int*", false});
  // AppendParams in templates/cache_append.metal.mustache: 4 stride triples
  // of 8 bytes, then 10 four-byte fields.
  p.params_bytes = 8 * 12 + 4 * 10;
  return p;
}

}  // namespace mfagen::plan
