#include "spec/score_function_fields.h"

#include <fmt/format.h>

#include <array>

#include "expr/parser.h"
#include "expr/score_functions.h"
#include "expr/type_check.h"
#include "spec/metal_identifier.h"

namespace mfagen::spec::detail {

namespace {

// A name the expressions use for a captured tensor or scalar: a Metal
// identifier that is not a name of the language, and not taken.
void check_mod_name(const std::string& name, const Where& at, const std::vector<std::string>& taken) {
  if (std::string problem = metal_identifier_problem(name); !problem.empty()) at.fail(problem);
  if (expr::reserved_name(name))
    at.fail(fmt::format("\"{}\" is a name of the expression language (score, b, h, q_idx, kv_idx, B, Hq, Hkv, Sq, "
                        "Sk, its functions, true, false); choose another",
                        name));
  for (const std::string& t : taken)
    if (t == name) at.fail(fmt::format("\"{}\" is declared twice (captures and scalars share one namespace)", name));
}

expr::LinearForm read_extent(const Json& value, const Where& at, std::string& text) {
  if (value.is_number_integer()) {
    const int64_t n = read_integer(value, at, 1, int64_t(1) << 31);
    text = std::to_string(n);
    return expr::LinearForm::of(n);
  }
  if (!value.is_string())
    at.fail_expected("a positive integer or a string such as \"Sq\" or \"Sq + Sk - 1\"", value);
  text = value.get<std::string>();
  try {
    return expr::parse_extent(text);
  } catch (const expr::ExpressionError& e) {
    at.fail(fmt::format("{} (in \"{}\")", e.what(), text));
  }
}

expr::CaptureDecl read_capture(const std::string& name, const Json& value, const Where& at) {
  if (!value.is_object()) at.fail_expected(R"(an object {"dtype": "float32", "shape": [...]})", value);
  static constexpr std::array<std::string_view, 3> kFields{"dtype", "shape", "comment"};
  check_known_fields(value, at, kFields);
  if (!value.contains("dtype") || !value.contains("shape"))
    at.fail("missing \"dtype\" or \"shape\"; a captured tensor needs both");
  expr::CaptureDecl c;
  c.name = name;
  const std::string& dtype = read_string(value["dtype"], at.field("dtype"));
  if (dtype == "float32") c.type = expr::CaptureType::float32;
  else if (dtype == "int32") c.type = expr::CaptureType::int32;
  else at.field("dtype").fail(fmt::format("expected \"float32\" or \"int32\", found {}", describe_value(value["dtype"])));
  const Json& shape = value["shape"];
  const Where shape_at = at.field("shape");
  if (!shape.is_array() || shape.empty() || shape.size() > 4)
    shape_at.fail_expected("a list of 1 to 4 extents", shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string text;
    c.extents.push_back(read_extent(shape[d], shape_at.element(d), text));
    c.extent_text.push_back(c.extents.back().text());
  }
  return c;
}

}  // namespace

ModDeclarations read_mod_declarations(const Json& object, const Where& at) {
  ModDeclarations out;
  std::vector<std::string> taken;
  if (object.contains("captures")) {
    const Json& value = object["captures"];
    const Where c_at = at.field("captures");
    if (!value.is_object()) c_at.fail_expected(R"(an object {"name": {"dtype": ..., "shape": [...]}, ...})", value);
    if (value.size() > expr::kMaxCaptures)
      c_at.fail(fmt::format("expected at most {} captured tensors (Metal's buffer indices run out), found {}",
                            expr::kMaxCaptures, value.size()));
    for (const auto& [name, decl] : value.items()) {
      const Where n_at = c_at.field(name);
      check_mod_name(name, n_at, taken);
      taken.push_back(name);
      out.captures.push_back(read_capture(name, decl, n_at));
    }
  }
  if (object.contains("scalars")) {
    const Json& value = object["scalars"];
    const Where s_at = at.field("scalars");
    if (!value.is_array()) s_at.fail_expected("a list of scalar names", value);
    if (value.size() > expr::kMaxScalars)
      s_at.fail(fmt::format("expected at most {} scalars, found {}", expr::kMaxScalars, value.size()));
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string& name = read_string(value[i], s_at.element(i));
      check_mod_name(name, s_at.element(i), taken);
      taken.push_back(name);
      out.scalars.push_back(name);
    }
  }
  if ((!out.captures.empty() || !out.scalars.empty()) && !object.contains("score_mod") && !object.contains("mask_mod"))
    at.fail("\"captures\" and \"scalars\" are read by score_mod or mask_mod; this kernel has neither");
  return out;
}

void check_mod_expressions(const Json& object, const Where& at, const ModDeclarations& declared) {
  expr::ScoreFunctions f;
  f.captures = declared.captures;
  f.scalars = declared.scalars;
  for (const char* field : {"score_mod", "mask_mod"}) {
    if (!object.contains(field)) continue;
    const Json& value = object[field];
    const Where f_at = at.field(field);
    const auto check = [&](const Json& v, const Where& w) {
      const std::string& text = read_string(v, w);
      expr::ScoreFunctions one = f;
      (field == std::string_view("score_mod") ? one.score_mod : one.mask_mod) = text;
      if (text.empty()) w.fail("expected an expression, found an empty string");
      try {
        expr::check_score_functions(one);
      } catch (const expr::ExpressionError& e) {
        w.fail(fmt::format("column {}: {}", e.column(), e.message()));
      }
    };
    if (!value.is_array()) {
      check(value, f_at);
      continue;
    }
    for (size_t i = 0; i < value.size(); ++i) check(value[i], f_at.element(i));
  }
}

}  // namespace mfagen::spec::detail
