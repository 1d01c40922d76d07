#include "spec/kernel_object.h"

#include <algorithm>
#include <optional>

#include "spec/canonical.h"
#include "spec/score_function_fields.h"
#include "spec/spec_fields.h"

namespace mfagen::spec::detail {

namespace {

// The values of one field: one for a plain value, several for a list.
std::vector<Setter> field_choices(const FieldRule& rule, const Json& value, const Where& at) {
  if (!value.is_array()) return {rule.parse(value, at)};
  if (value.empty()) at.fail("expected a value or a non-empty list of values, found an empty list");
  std::vector<Setter> choices;
  for (size_t i = 0; i < value.size(); ++i) {
    Where element = at.element(i);
    if (value[i].is_array()) element.fail_expected("a single value (lists do not nest)", value[i]);
    choices.push_back(rule.parse(value[i], element));
  }
  return choices;
}

// Defaults that depend on other fields, once a combination is chosen.
void complete(KernelSpec& spec, const Where& at) {
  if (spec.head_dim_v != 0) return;
  if (spec.head_dim > 512) {
    at.field("head_dim_v").fail(fmt::format(
        "missing; required when head_dim > 512 (head_dim is {}, head_dim_v must be in 1..512)",
        spec.head_dim));
  }
  spec.head_dim_v = spec.head_dim;
}

}  // namespace

std::vector<KernelSpec> expand_kernel_object(const Json& object, const Where& at) {
  if (!object.is_object()) at.fail_expected("a kernel object", object);
  check_known_fields(object, at, kernel_field_names());
  if (object.contains("comment")) read_string(object["comment"], at.field("comment"));

  const ModDeclarations declared = read_mod_declarations(object, at);
  check_mod_expressions(object, at, declared);

  std::vector<std::vector<Setter>> choices;  // one entry per field present, in table order
  uint64_t count = 1;
  for (const FieldRule& rule : list_fields()) {
    if (!object.contains(rule.name)) {
      if (rule.required) at.fail(fmt::format("missing required field \"{}\"", rule.name));
      continue;
    }
    choices.push_back(field_choices(rule, object[rule.name], at.field(rule.name)));
    count = std::min(count * choices.back().size(), kMaxKernelsPerObject + 1);
  }

  if (count > kMaxKernelsPerObject) {
    at.fail(fmt::format("expected lists that expand to at most {} kernels, found more",
                        kMaxKernelsPerObject));
  }
  std::optional<std::string> name;
  if (object.contains("name")) {
    Where name_at = at.field("name");
    name = read_name(object["name"], name_at);
    if (count > 1) {
      name_at.fail(fmt::format("a fixed name cannot be used with lists that expand to {} kernels",
                               count));
    }
  }

  // An odometer over the choices: the last field turns fastest.
  std::vector<size_t> index(choices.size(), 0);
  std::vector<KernelSpec> out;
  out.reserve(count);
  for (uint64_t n = 0; n < count; ++n) {
    KernelSpec spec;
    for (size_t f = 0; f < choices.size(); ++f) choices[f][index[f]](spec);
    spec.mods.captures = declared.captures;
    spec.mods.scalars = declared.scalars;
    complete(spec, at);
    spec.name_given = name.has_value();
    spec.name = name ? *name : derived_name(spec);
    spec.origin = {at.file, at.path};
    out.push_back(std::move(spec));
    for (size_t f = choices.size(); f-- > 0;) {
      if (++index[f] < choices[f].size()) break;
      index[f] = 0;
    }
  }
  return out;
}

}  // namespace mfagen::spec::detail
