// The AST side of the Metal-subset rules (rules.h), clang-tools-extra style:
// each rule is an AST matcher plus a callback that records a Finding; turning
// findings into located, deduplicated diagnostics is the reporter's job
// (check.cpp). Only code of the checked file is matched, never the stand-in.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::check {

struct Finding {
  std::string_view rule;
  clang::SourceLocation location;
  std::string message;
};

// Owns one callback per rule; register them on a MatchFinder, run it, and
// read the findings.
class RuleMatchers {
 public:
  explicit RuleMatchers(std::vector<Finding>& findings);
  ~RuleMatchers();
  void register_on(clang::ast_matchers::MatchFinder& finder);

 private:
  std::vector<std::unique_ptr<clang::ast_matchers::MatchFinder::MatchCallback>> callbacks_;
};

}  // namespace mfagen::check
