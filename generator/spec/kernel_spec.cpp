#include "spec/kernel_spec.h"

#include <utility>

namespace mfagen::spec {

std::string_view to_string(Kind v) {
  switch (v) {
    case Kind::forward: return "forward";
    case Kind::decode: return "decode";
    case Kind::backward: return "backward";
    case Kind::cache_append: return "cache_append";
  }
  return "?";
}

std::string_view to_string(DType v) {
  switch (v) {
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::float32: return "float32";
  }
  return "?";
}

std::string_view to_string(Causal v) {
  switch (v) {
    case Causal::none: return "none";
    case Causal::top_left: return "top_left";
    case Causal::bottom_right: return "bottom_right";
  }
  return "?";
}

std::string_view to_string(MaskKind v) {
  switch (v) {
    case MaskKind::none: return "none";
    case MaskKind::boolean: return "bool";
    case MaskKind::additive: return "additive";
  }
  return "?";
}

std::string_view to_string(Target v) {
  switch (v) {
    case Target::apple7: return "apple7";
    case Target::apple8: return "apple8";
    case Target::apple9: return "apple9";
    case Target::apple10: return "apple10";
  }
  return "?";
}

std::string_view to_string(Layout v) {
  switch (v) {
    case Layout::dense: return "dense";
    case Layout::varlen: return "varlen";
  }
  return "?";
}

std::string_view to_string(KvCache v) {
  switch (v) {
    case KvCache::dense: return "dense";
    case KvCache::paged: return "paged";
  }
  return "?";
}

std::string_view to_string(KvDType v) {
  switch (v) {
    case KvDType::as_dtype: return "as dtype";
    case KvDType::float16: return "float16";
    case KvDType::bfloat16: return "bfloat16";
    case KvDType::float32: return "float32";
    case KvDType::q8_0: return "q8_0";
    case KvDType::q4_0: return "q4_0";
    case KvDType::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

// origin is left out on purpose: the same kernel asked for by two files is
// the same kernel (that is how duplicates are recognised).
bool KernelSpec::operator==(const KernelSpec& o) const {
  return kind == o.kind && dtype == o.dtype && head_dim == o.head_dim &&
         head_dim_v == o.head_dim_v && causal == o.causal && gqa == o.gqa &&
         mask == o.mask && window == o.window && softcap == o.softcap &&
         alibi == o.alibi && sinks == o.sinks && layout == o.layout && kv_cache == o.kv_cache && kv_dtype == o.kv_dtype && dropout == o.dropout && mods == o.mods && lse == o.lse && tiles == o.tiles &&
         target == o.target && name == o.name && name_given == o.name_given;
}

namespace {
std::string full_message(const std::string& file, const std::string& path,
                         const std::string& message) {
  std::string out = file + ": ";
  if (!path.empty()) out += path + ": ";
  return out + message;
}
}  // namespace

SpecError::SpecError(std::string file, std::string json_path, std::string message)
    : std::runtime_error(full_message(file, json_path, message)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      message_(std::move(message)) {}

}  // namespace mfagen::spec
