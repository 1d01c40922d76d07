#include "kernel_summary.h"

#include <fmt/format.h>

namespace mfagen::cli {
namespace {

std::string yes_no(bool b) { return b ? "yes" : "no"; }

std::string tiles_text(const nlohmann::json& tiles) {
  const uint32_t key_groups = tiles.value("key_groups", 1u);
  return fmt::format("{}x{}x{}{}", tiles.at("block_q").get<uint32_t>(), tiles.at("block_k").get<uint32_t>(),
                     tiles.at("simdgroups").get<uint32_t>(),
                     key_groups > 1 ? fmt::format("/{}", key_groups) : std::string());
}

}  // namespace

TextRow kernel_summary(const nlohmann::json& s, const nlohmann::json& dispatch) {
  const nlohmann::json& tiles = s.at("tiles");
  std::string tiles_cell = "tiles=";
  if (!tiles.is_null())
    tiles_cell += tiles_text(tiles);
  else if (dispatch.is_object())
    tiles_cell += "table:" + tiles_text(dispatch);
  else
    tiles_cell += "table";
  // Features this version refuses to plan are still shown, so a listing of
  // a spec file says what it asks for.
  std::string extras;
  if (s.at("mask").get<std::string>() != "none") extras += " mask=" + s.at("mask").get<std::string>();
  for (const char* flag : {"window", "softcap", "alibi"})
    if (s.at(flag).get<bool>()) extras += std::string(" ") + flag;
  if (s.value("sinks", false)) extras += " sinks";  // serving features are in a spec only when on
  return {
      s.at("name").get<std::string>(),
      s.at("kind").get<std::string>(),
      s.at("dtype").get<std::string>(),
      fmt::format("D={} Dv={}", s.at("head_dim").get<uint32_t>(), s.at("head_dim_v").get<uint32_t>()),
      "causal=" + s.at("causal").get<std::string>(),
      "gqa=" + yes_no(s.at("gqa").get<bool>()),
      "lse=" + yes_no(s.at("lse").get<bool>()),
      tiles_cell,
      s.at("target").get<std::string>() + extras,
  };
}

}  // namespace mfagen::cli
