// The environment the expression tests check against: a relative-position
// bias table, per-token document ids and a per-head scalar table.
#pragma once

#include <string>

#include "expr/environment.h"
#include "expr/expression.h"
#include "expr/parser.h"
#include "expr/score_functions.h"
#include "expr/type_check.h"

namespace mfagen::expr::testing {

inline CaptureDecl capture(std::string name, CaptureType type, std::vector<std::string> extents) {
  CaptureDecl c;
  c.name = std::move(name);
  c.type = type;
  for (const std::string& e : extents) {
    c.extents.push_back(parse_extent(e));
    c.extent_text.push_back(e);
  }
  return c;
}

inline Environment test_environment() {
  Environment env;
  env.captures = {capture("bias", CaptureType::float32, {"255"}),
                  capture("rel", CaptureType::float32, {"Sq + Sk - 1"}),
                  capture("q_doc", CaptureType::int32, {"B", "Sq"}),
                  capture("kv_doc", CaptureType::int32, {"B", "Sk"}),
                  capture("head_scale", CaptureType::float32, {"Hq"})};
  env.scalars = {"prefix", "temperature"};
  return env;
}

inline NodePtr checked(const std::string& text, Type want = Type::real, bool score_allowed = true) {
  Environment env = test_environment();
  env.score_allowed = score_allowed;
  return type_check(parse_expression(text), env, want);
}

}  // namespace mfagen::expr::testing
