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
    case Kind::cache_append: return "append";
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

// score_mod, mask_mod and what they read, as they appear in the canonical form.
nlohmann::ordered_json mods_json(const expr::ScoreFunctions& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!m.score_mod.empty()) j["score_mod"] = m.score_mod;
  if (!m.mask_mod.empty()) j["mask_mod"] = m.mask_mod;
  if (!m.captures.empty()) {
    nlohmann::ordered_json captures = nlohmann::ordered_json::object();
    for (const expr::CaptureDecl& c : m.captures) {
      nlohmann::ordered_json shape = nlohmann::ordered_json::array();
      for (const expr::LinearForm& e : c.extents) {
        if (e.is_constant()) shape.push_back(e.constant);
        else shape.push_back(e.text());
      }
      captures[c.name] = {{"dtype", expr::spelling(c.type)}, {"shape", shape}};
    }
    j["captures"] = captures;
  }
  if (!m.scalars.empty()) j["scalars"] = m.scalars;
  return j;
}

uint64_t fnv1a(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

std::string derived_name(const KernelSpec& s) {
  if (s.kind == Kind::cache_append) {  // not attention: only what the write depends on
    std::string n = fmt::format("kv_append_{}_d{}", short_name(s.dtype), s.head_dim);
    if (s.head_dim_v != s.head_dim) n += fmt::format("_dv{}", s.head_dim_v);
    if (s.layout == Layout::varlen) n += "_varlen";
    if (s.kv_cache == KvCache::paged) n += "_paged";
    if (s.kv_dtype != KvDType::as_dtype) n += fmt::format("_{}", to_string(s.kv_dtype));
    return n;
  }
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
  // Expressions do not fit a name: a short hash of them tells kernels apart.
  if (s.mods.any()) n += fmt::format("_mods_{:08x}", uint32_t(mods_id(s) >> 32));
  if (!s.lse) n += "_nolse";
  if (s.tiles) n += fmt::format("_q{}k{}s{}", s.tiles->block_q, s.tiles->block_k, s.tiles->simdgroups);
  if (s.tiles && s.tiles->key_groups > 1) n += fmt::format("g{}", s.tiles->key_groups);
  if (s.target != Target::apple9) n += fmt::format("_{}", to_string(s.target));
  return n;
}

uint64_t mods_id(const KernelSpec& s) { return s.mods.any() ? fnv1a(mods_json(s.mods).dump()) : 0; }

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
  const nlohmann::ordered_json mods = mods_json(s.mods);
  for (const auto& [key, value] : mods.items()) j[key] = value;
  j["lse"] = s.lse;
  j["accumulate"] = "float32";
  if (s.tiles) {
    j["tiles"] = {{"block_q", s.tiles->block_q},
                  {"block_k", s.tiles->block_k},
                  {"simdgroups", s.tiles->simdgroups}};
    // Only when split, so that the canonical form of every other kernel stays as it was.
    if (s.tiles->key_groups > 1) j["tiles"]["key_groups"] = s.tiles->key_groups;
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
  uint64_t h = fnv1a(canonical_json(spec));
  h = fnv1a("|", h);
  h = fnv1a(template_version, h);
  return fmt::format("{:016x}", h);
}

}  // namespace mfagen::spec
