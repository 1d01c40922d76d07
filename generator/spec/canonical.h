// Canonical forms of a KernelSpec: the name derived from its fields, a JSON
// text that is identical for equal specs, and a content hash of that text
// with the template version (recorded in the manifest and generated files).
#pragma once

#include <string>
#include <string_view>

#include "spec/kernel_spec.h"

namespace mfagen::spec {

// attn_{fwd|decode|bwd}_{f16|bf16|f32}_d{D}[_dv{Dv}][_causal_tl|_causal_br]
// [_gqa][_mask_bool|_mask_add][_window][_softcap][_alibi][_sinks][_varlen][_paged][_kv_{kv_dtype}][_dropout]
// [_mods_{8 hex digits of mods_id}][_nolse]
// [_q{bq}k{bk}s{sg}][_apple7|_apple8|_apple10], each optional part present
// when it differs from the default (gqa: when true; target: when not apple9),
// e.g. "attn_fwd_f16_d128_causal_br_gqa". Distinct specs get distinct names.
std::string derived_name(const KernelSpec& spec);

// One line of JSON with every field in table order and a concrete value
// (tiles: an object or null; accumulate "float32"; name included; comment
// and origin left out). Parsing it back gives the same spec, with the name
// now given.
std::string canonical_json(const KernelSpec& spec);

// Identifies a spec's score_mod, mask_mod and what they read (64-bit FNV-1a
// of their canonical JSON); 0 for a spec without them. The manifest records
// it and runtime selection matches it exactly.
uint64_t mods_id(const KernelSpec& spec);

// 16 lowercase hex digits: 64-bit FNV-1a of canonical_json(spec) + "|" +
// template_version.
std::string spec_hash(const KernelSpec& spec, std::string_view template_version);

}  // namespace mfagen::spec
