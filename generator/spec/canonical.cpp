#include "spec/canonical.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace mfagen::spec {

namespace {

std::string_view short_name(Kind k) {
  switch (k) {
    case Kind::forward: return "fwd";
    case Kind::decode: return "decode";
    case Kind::backward: return "bwd";
  }
  return "?";
}

std::string_view short_name(DType t) {
  switch (t) {
    case DType::float16: return "f16";
    case DType::bfloat16: return "bf16";
    case DType::float32: return "f32";
  }
  return "?";
}

}  // namespace

std::string derived_name(const KernelSpec& s) {
  std::string n = fmt::format("attn_{}_{}_d{}", short_name(s.kind), short_name(s.dtype), s.head_dim);
  if (s.head_dim_v != s.head_dim) n += fmt::format("_dv{}", s.head_dim_v);
  if (s.causal == Causal::top_left) n += "_causal_tl";
  if (s.causal == Causal::bottom_right) n += "_causal_br";
  if (s.gqa) n += "_gqa";
  if (s.mask == MaskKind::boolean) n += "_mask_bool";
  if (s.mask == MaskKind::additive) n += "_mask_add";
  if (s.window) n += "_window";
  if (s.softcap) n += "_softcap";
  if (s.alibi) n += "_alibi";
  if (s.sinks) n += "_sinks";
  if (s.layout == Layout::varlen) n += "_varlen";
  if (s.kv_cache == KvCache::paged) n += "_paged";
  if (s.kv_dtype != KvDType::as_dtype) n += fmt::format("_kv_{}", to_string(s.kv_dtype));
  if (s.dropout) n += "_dropout";
  if (!s.lse) n += "_nolse";
  if (s.tiles) n += fmt::format("_q{}k{}s{}", s.tiles->block_q, s.tiles->block_k, s.tiles->simdgroups);
  if (s.target != Target::apple9) n += fmt::format("_{}", to_string(s.target));
  return n;
}

std::string canonical_json(const KernelSpec& s) {
  nlohmann::ordered_json j;
  j["kind"] = to_string(s.kind);
  j["dtype"] = to_string(s.dtype);
  j["head_dim"] = s.head_dim;
  j["head_dim_v"] = s.head_dim_v;
  j["causal"] = to_string(s.causal);
  j["gqa"] = s.gqa;
  j["mask"] = to_string(s.mask);
  j["window"] = s.window;
  j["softcap"] = s.softcap;
  j["alibi"] = s.alibi;
  // Serving features (DESIGN.md section 13) appear only when on, so that the
  // canonical form, name and hash of every kernel without them stay as they were.
  if (s.sinks) j["sinks"] = true;
  if (s.layout != Layout::dense) j["layout"] = to_string(s.layout);
  if (s.kv_cache != KvCache::dense) j["kv_cache"] = to_string(s.kv_cache);
  if (s.kv_dtype != KvDType::as_dtype) j["kv_dtype"] = to_string(s.kv_dtype);
  if (s.dropout) j["dropout"] = true;
  j["lse"] = s.lse;
  j["accumulate"] = "float32";
  if (s.tiles) {
    j["tiles"] = {{"block_q", s.tiles->block_q},
                  {"block_k", s.tiles->block_k},
                  {"simdgroups", s.tiles->simdgroups}};
  } else {
    j["tiles"] = nullptr;
  }
  j["target"] = to_string(s.target);
  j["name"] = s.name;
  return j.dump();
}

std::string spec_hash(const KernelSpec& spec, std::string_view template_version) {
  // FNV-1a, 64-bit: tiny, stable across platforms and releases, and enough
  // to tell specs apart in a manifest (not a security boundary).
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
  };
  mix(canonical_json(spec));
  mix("|");
  mix(template_version);
  return fmt::format("{:016x}", h);
}

}  // namespace mfagen::spec
