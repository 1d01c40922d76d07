// The one-line description of a kernel that `mfagen list` prints, built from
// the canonical spec object (spec::canonical_json), which is what both spec
// files (after parsing) and manifest.json (its "spec" entries) provide. One
// function for both, so a kernel reads the same before and after generation.
#pragma once

#include <nlohmann/json.hpp>

#include "text_table.h"

namespace mfagen::cli {

// Cells: name, kind, dtype, D=.. Dv=.., causal=.., gqa=yes|no, lse=yes|no,
// tiles=BQxBKxSG | table[:BQxBKxSG], target (+ mask/window/softcap/alibi
// when asked for). `dispatch` (a manifest's "dispatch" object, or null) adds
// the tiles the planner chose from its table.
// Throws nlohmann::json::exception if a field is missing or mistyped.
TextRow kernel_summary(const nlohmann::json& canonical_spec, const nlohmann::json& dispatch = nullptr);

}  // namespace mfagen::cli
