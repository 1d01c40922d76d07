#include "spec/spec_fields.h"

#include <array>
#include <span>

#include "spec/metal_identifier.h"

namespace mfagen::spec::detail {

namespace {

template <auto Member, auto& AllValues>
Setter enum_field(const Json& value, const Where& at) {
  auto v = read_enum(value, at, AllValues);
  return [v](KernelSpec& s) { s.*Member = v; };
}

template <auto Member>
Setter bool_field(const Json& value, const Where& at) {
  bool v = read_bool(value, at);
  return [v](KernelSpec& s) { s.*Member = v; };
}

Setter head_dim(const Json& value, const Where& at) {
  auto d = static_cast<uint32_t>(read_integer(value, at, 1, 576));
  return [d](KernelSpec& s) { s.head_dim = d; };
}

Setter head_dim_v(const Json& value, const Where& at) {
  auto d = static_cast<uint32_t>(read_integer(value, at, 1, 512));
  return [d](KernelSpec& s) { s.head_dim_v = d; };
}

// A float kv_dtype naming the spec's own dtype is the default (dtype comes
// first in table order, so it is set when this runs); quantized formats and
// other float dtypes are kept (the planner refuses the latter with the reason).
Setter kv_dtype(const Json& value, const Where& at) {
  const KvDType v = read_enum(value, at, kAllKvDTypes);
  return [v](KernelSpec& s) {
    const bool same = (v == KvDType::float16 && s.dtype == DType::float16) ||
                      (v == KvDType::bfloat16 && s.dtype == DType::bfloat16) ||
                      (v == KvDType::float32 && s.dtype == DType::float32);
    s.kv_dtype = same ? KvDType::as_dtype : v;
  };
}

// Statistics and O always accumulate in float32; the field exists so a spec
// can say so, and so that a different wish is refused rather than ignored.
Setter accumulate(const Json& value, const Where& at) {
  const std::string& text = read_string(value, at);
  if (text != "float32") {
    at.fail(fmt::format("expected \"float32\" (softmax statistics and O always accumulate in "
                        "float32), found {}",
                        describe_value(value)));
  }
  return [](KernelSpec&) {};
}

uint32_t read_block(const Json& value, const Where& at) {
  constexpr std::string_view kExpected = "a multiple of 8 in 8..1024";
  int64_t n = read_json_integer(value, at, kExpected);
  if (n < 8 || n > 1024 || n % 8 != 0) {
    at.fail(fmt::format("expected {}, found {}", kExpected, value.dump()));
  }
  return static_cast<uint32_t>(n);
}

// {"block_q": n, "block_k": n, "simdgroups": n} with an optional
// "key_groups": n, or null for "the planner decides" (what canonical_json
// writes when no tiles were given). Limits that depend on the kind, the head
// dim and threadgroup memory are the planner's to check.
Setter tiles(const Json& value, const Where& at) {
  if (value.is_null()) return [](KernelSpec& s) { s.tiles.reset(); };
  if (!value.is_object()) {
    at.fail_expected(R"(an object {"block_q": n, "block_k": n, "simdgroups": n})", value);
  }
  static constexpr std::array<std::string_view, 4> kFields{"block_q", "block_k", "simdgroups", "key_groups"};
  check_known_fields(value, at, kFields);
  for (std::string_view f : std::span(kFields).first(3)) {
    if (!value.contains(f)) {
      at.fail(fmt::format("missing field \"{}\"; tiles need block_q, block_k and simdgroups", f));
    }
  }
  Tiles t;
  t.block_q = read_block(value["block_q"], at.field("block_q"));
  t.block_k = read_block(value["block_k"], at.field("block_k"));
  t.simdgroups = static_cast<uint32_t>(read_integer(value["simdgroups"], at.field("simdgroups"), 1, 1024));
  // 32 threads each; Metal allows at most 1024 threads per threadgroup.
  if (t.simdgroups > 32) {
    at.field("simdgroups").fail(fmt::format(
        "expected at most 32 simdgroups, found {}: {} threads per threadgroup exceed Metal's limit of 1024",
        t.simdgroups, 32 * t.simdgroups));
  }
  if (value.contains("key_groups")) {
    t.key_groups = static_cast<uint32_t>(read_integer(value["key_groups"], at.field("key_groups"), 1, 32));
    if (t.simdgroups % t.key_groups != 0) {
      at.field("key_groups").fail(fmt::format("expected a divisor of simdgroups ({}), found {}", t.simdgroups,
                                              t.key_groups));
    }
  }
  // Each simdgroup owns whole 8-row tiles of the query block; the key groups share the rows.
  const uint32_t row_simdgroups = t.simdgroups / t.key_groups;
  if (t.block_q % (8 * row_simdgroups) != 0) {
    at.field("block_q").fail(fmt::format(
        "expected a multiple of {} (8 rows for each of the {} simdgroups{}), found {}", 8 * row_simdgroups,
        row_simdgroups, t.key_groups > 1 ? " of a key group" : "", t.block_q));
  }
  return [t](KernelSpec& s) { s.tiles = t; };
}

// score_mod and mask_mod: the text; check_mod_expressions() has checked it
// against the object's captures and scalars before any setter runs.
template <std::string expr::ScoreFunctions::*Member>
Setter mod_expression(const Json& value, const Where& at) {
  std::string text = read_string(value, at);
  return [text](KernelSpec& s) { s.mods.*Member = text; };
}

constexpr std::array<FieldRule, 21> kListFields{{
    {"kind", false, enum_field<&KernelSpec::kind, kAllKinds>},
    {"dtype", true, enum_field<&KernelSpec::dtype, kAllDTypes>},
    {"head_dim", true, head_dim},
    {"head_dim_v", false, head_dim_v},
    {"causal", false, enum_field<&KernelSpec::causal, kAllCausals>},
    {"gqa", false, bool_field<&KernelSpec::gqa>},
    {"mask", false, enum_field<&KernelSpec::mask, kAllMaskKinds>},
    {"window", false, bool_field<&KernelSpec::window>},
    {"softcap", false, bool_field<&KernelSpec::softcap>},
    {"alibi", false, bool_field<&KernelSpec::alibi>},
    {"sinks", false, bool_field<&KernelSpec::sinks>},
    {"layout", false, enum_field<&KernelSpec::layout, kAllLayouts>},
    {"kv_cache", false, enum_field<&KernelSpec::kv_cache, kAllKvCaches>},
    {"kv_dtype", false, kv_dtype},
    {"dropout", false, bool_field<&KernelSpec::dropout>},
    {"score_mod", false, mod_expression<&expr::ScoreFunctions::score_mod>},
    {"mask_mod", false, mod_expression<&expr::ScoreFunctions::mask_mod>},
    {"lse", false, bool_field<&KernelSpec::lse>},
    {"accumulate", false, accumulate},
    {"tiles", false, tiles},
    {"target", false, enum_field<&KernelSpec::target, kAllTargets>},
}};

constexpr std::array<std::string_view, 25> kKernelFieldNames{
    "kind",     "dtype",    "head_dim", "head_dim_v", "causal",   "gqa",        "mask",  "window", "softcap",
    "alibi",    "sinks",    "layout",   "kv_cache",   "kv_dtype", "dropout",    "score_mod", "mask_mod", "lse",
    "accumulate", "tiles", "target",   "captures",   "scalars",  "name",       "comment"};

}  // namespace

std::span<const FieldRule> list_fields() { return kListFields; }

std::span<const std::string_view> kernel_field_names() { return kKernelFieldNames; }

std::string read_name(const Json& value, const Where& at) {
  if (value.is_array()) {
    // One name cannot serve several kernels; lists get derived names.
    at.fail_expected("a string (one name, not a list)", value);
  }
  const std::string& name = read_string(value, at);
  if (std::string problem = metal_identifier_problem(name); !problem.empty()) at.fail(problem);
  return name;
}

}  // namespace mfagen::spec::detail
