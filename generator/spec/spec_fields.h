// The fields of a kernel object (DESIGN.md section 2): how each single value
// is checked and stored into a KernelSpec. Lists and their expansion are the
// caller's business (kernel_object.h); these see one value at a time.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "spec/json_values.h"
#include "spec/kernel_spec.h"

namespace mfagen::spec::detail {

// Stores one checked value into a spec. Values are checked when the JSON is
// read, so applying a combination of them cannot fail.
using Setter = std::function<void(KernelSpec&)>;

struct FieldRule {
  std::string_view name;
  bool required;
  Setter (*parse)(const Json& value, const Where& at);  // one value, never a list
};

// The fields that may be lists, in the table order of DESIGN.md section 2:
// kind, dtype, head_dim, head_dim_v, causal, gqa, mask, window, softcap,
// alibi, sinks, layout, kv_cache, kv_dtype, dropout, score_mod, mask_mod, lse, accumulate, tiles, target.
// Expansion follows this order.
std::span<const FieldRule> list_fields();

// Every field a kernel object accepts: list_fields(), then "captures" and
// "scalars" (score_function_fields.h), "name" and "comment" (free text, ignored).
std::span<const std::string_view> kernel_field_names();

// A user-given kernel name: a string, and a usable Metal identifier.
std::string read_name(const Json& value, const Where& at);

}  // namespace mfagen::spec::detail
