// Library::load: manifest.json (written by mfagen generate) into the
// immutable kernel table. This is the only place the runtime reads JSON.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mfagen/library.h"

namespace mfagen {
namespace {

using Json = nlohmann::json;

template <class Enum, size_t N>
Enum parse_enum(const Json& value, const std::array<std::pair<std::string_view, Enum>, N>& names, const char* what) {
  const std::string text = value.get<std::string>();
  for (const auto& [name, e] : names)
    if (name == text) return e;
  throw ManifestError(std::string("manifest: unknown ") + what + " \"" + text + "\"");
}

KernelEntry parse_kernel(const Json& k) {
  KernelEntry e;
  const Json& spec = k.at("spec");
  const Json& dispatch = k.at("dispatch");
  e.name = k.at("name").get<std::string>();
  e.file = k.at("file").get<std::string>();
  e.hash = k.at("hash").get<std::string>();
  e.kind = parse_enum(spec.at("kind"),
                      std::array<std::pair<std::string_view, KernelKind>, 3>{
                          {{"forward", KernelKind::forward}, {"decode", KernelKind::decode}, {"backward", KernelKind::backward}}},
                      "kind");
  e.dtype = parse_enum(spec.at("dtype"),
                       std::array<std::pair<std::string_view, ElementType>, 3>{{{"float16", ElementType::float16},
                                                                                 {"bfloat16", ElementType::bfloat16},
                                                                                 {"float32", ElementType::float32}}},
                       "dtype");
  e.causal = parse_enum(spec.at("causal"),
                        std::array<std::pair<std::string_view, CausalMode>, 3>{{{"none", CausalMode::none},
                                                                                 {"top_left", CausalMode::top_left},
                                                                                 {"bottom_right", CausalMode::bottom_right}}},
                        "causal mode");
  ForwardKernelInfo& info = e.info;
  info.entry = e.name;
  info.element_bytes = e.dtype == ElementType::float32 ? 4 : 2;
  info.head_dim = spec.at("head_dim").get<uint32_t>();
  info.head_dim_v = spec.at("head_dim_v").get<uint32_t>();
  info.block_q = dispatch.at("block_q").get<uint32_t>();
  info.block_k = dispatch.at("block_k").get<uint32_t>();
  info.threads = dispatch.at("threads_per_threadgroup").get<uint32_t>();
  info.threadgroup_bytes = dispatch.at("threadgroup_memory_bytes").get<uint32_t>();
  info.gqa = spec.at("gqa").get<bool>();
  info.lse = spec.at("lse").get<bool>();
  info.mask = parse_enum(spec.at("mask"),
                         std::array<std::pair<std::string_view, MaskInput>, 3>{{{"none", MaskInput::none},
                                                                                {"bool", MaskInput::boolean},
                                                                                {"additive", MaskInput::additive}}},
                         "mask");
  info.window = spec.at("window").get<bool>();
  info.softcap = spec.at("softcap").get<bool>();
  info.alibi = spec.at("alibi").get<bool>();
  info.decode = e.kind == KernelKind::decode;
  info.backward = e.kind == KernelKind::backward;
  if (info.decode) info.combine_entry = dispatch.at("combine_entry").get<std::string>();
  e.params_bytes = k.at("params").at("bytes").get<uint32_t>();
  return e;
}

}  // namespace

Library Library::load_from_memory(std::string_view manifest_json, std::filesystem::path directory) {
  Library library;
  library.directory_ = std::move(directory);
  try {
    const Json m = Json::parse(manifest_json);
    if (m.at("format").get<int>() != 1)
      throw ManifestError("manifest: format " + std::to_string(m.at("format").get<int>()) +
                          " is not supported (this runtime reads format 1)");
    for (const Json& k : m.at("kernels")) library.kernels_.push_back(parse_kernel(k));
  } catch (const nlohmann::json::exception& e) {
    throw ManifestError(std::string("manifest: ") + e.what());
  }
  return library;
}

Library Library::load(const std::filesystem::path& manifest) {
  std::ifstream in(manifest, std::ios::binary);
  if (!in) throw ManifestError("cannot read " + manifest.string());
  std::stringstream text;
  text << in.rdbuf();
  try {
    return load_from_memory(text.str(), manifest.parent_path());
  } catch (const ManifestError& e) {
    throw ManifestError(manifest.string() + ": " + e.what());
  }
}

}  // namespace mfagen
