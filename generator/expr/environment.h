// What the names of a score_mod or mask_mod expression mean: the variables
// of the language, the spec's runtime scalars and its captured tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "expr/linear_form.h"

namespace mfagen::expr {

enum class CaptureType : uint8_t { float32, int32 };

// A tensor the expressions read (DESIGN.md section 13): contiguous, row-major,
// with extents that are linear forms of the call's sizes ("Sq", "B", 255,
// "Sq + Sk - 1"); its buffer is bound at launch, and the runtime checks it
// holds the extents' product of elements for the call.
struct CaptureDecl {
  std::string name;
  CaptureType type = CaptureType::float32;
  std::vector<LinearForm> extents;
  std::vector<std::string> extent_text;  // as the spec wrote them
};

struct Environment {
  std::vector<CaptureDecl> captures;
  std::vector<std::string> scalars;  // runtime float32 scalars, in the spec's order
  bool score_allowed = true;         // score_mod reads score; mask_mod cannot
};

// Names a capture or scalar cannot take: the variables, sizes, literals and functions.
bool reserved_name(const std::string& name);

const char* spelling(CaptureType);

}  // namespace mfagen::expr
