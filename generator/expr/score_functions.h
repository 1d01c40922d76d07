// score_mod and mask_mod of one spec (DESIGN.md section 13), from the text the
// spec gives to what the kernel templates paste in: the checked expressions,
// the derivative the backward needs, and the MSL of the functions, of their
// inputs and of the kernel parameters that bind them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "expr/environment.h"
#include "expr/expression.h"

namespace mfagen::expr {

// Metal's buffer indices 0..30: generated kernels use 0..20 for their own
// tensors; the scalars take 21, captured tensors 22 on, and mask_mod's block
// classes 30.
inline constexpr uint32_t kModScalarsIndex = 21;
inline constexpr uint32_t kFirstCaptureIndex = 22;
// mask_mod kernels: the block classes their _blocks kernel writes (scratch).
inline constexpr uint32_t kBlockClassesIndex = 30;
inline constexpr size_t kMaxCaptures = 4;
inline constexpr size_t kMaxScalars = 16;

struct ScoreFunctions {
  std::string score_mod;  // "" when the spec has none
  std::string mask_mod;   // "" when the spec has none
  std::vector<CaptureDecl> captures;
  std::vector<std::string> scalars;

  bool any() const { return !score_mod.empty() || !mask_mod.empty(); }
  bool operator==(const ScoreFunctions& o) const;
};

// Which expression an error is in.
class ScoreFunctionError : public ExpressionError {
 public:
  ScoreFunctionError(std::string field, const ExpressionError& e)
      : ExpressionError(e.column(), e.message()), field_(std::move(field)) {}
  const std::string& field() const { return field_; }  // "score_mod" or "mask_mod"

 private:
  std::string field_;
};

struct CheckedScoreFunctions {
  Environment env;       // captures and scalars, for printing
  NodePtr score_mod;     // real; null when absent
  NodePtr score_slope;   // d score_mod / d score; null when absent
  NodePtr mask_mod;      // bool; null when absent
};

// Whether mask_mod depends on the batch entry (reads b) and on the head
// (reads h): when it does not, one table of block classes serves them all.
struct MaskDependence {
  bool batch = false, head = false;
};
MaskDependence mask_dependence(const ScoreFunctions& f);

// The float captured tensors score_mod reads, by position in f.captures: the
// backward writes their gradients (at most kMaxCaptureGradients).
std::vector<size_t> gradient_captures(const ScoreFunctions& f);
inline constexpr size_t kMaxCaptureGradients = 3;
inline constexpr uint32_t kFirstCaptureGradIndex = 26;   // d_capture_NAME, in gradient_captures() order
inline constexpr uint32_t kCaptureGradPartialsIndex = 29; // per-threadgroup partial sums (scratch)

// The backward's MSL for those gradients: capture_grad_elements(m), the
// elements of all of them for a call, and accumulate_capture_grads(), which
// adds one pair's contributions (dS times d score_mod / d element) into a
// threadgroup's partial sums. Empty when gradient_captures() is.
std::string msl_capture_gradients(const ScoreFunctions& f);
// The _dcaptures kernel's parameters for the gradients (one per line, `indent`
// first, no newline after the last) and the arguments passing them on (", d_capture_a, ...").
std::string msl_capture_gradient_parameters(const ScoreFunctions& f, const std::string& indent);
std::string msl_capture_gradient_arguments(const ScoreFunctions& f);
// The name of the buffer of a captured tensor's gradient: "d_capture_" + name.
std::string capture_gradient_buffer_name(const std::string& capture);

// Parses and checks both expressions; a ScoreFunctionError names the one at fault.
CheckedScoreFunctions check_score_functions(const ScoreFunctions& f);

// The kernel-side MSL: the ModInputs struct, the integer helpers and
// score_mod() and mask_mod() (those the spec has), and for the backward
// (`with_slope`) score_mod_slope(), d score_mod / d score.
std::string msl_functions(const ScoreFunctions& f, bool with_slope);
// Kernel parameters that bind the scalars and captured tensors, one per line,
// each line `indent` then the parameter and a comma (no newline after the last).
std::string msl_parameters(const ScoreFunctions& f, const std::string& indent);
// The statement building `mods` inside a kernel, from its parameters and the
// locals seq_q and seq_k.
std::string msl_inputs(const ScoreFunctions& f);

// The kernel parameter (and manifest buffer) that binds a captured tensor:
// "capture_" + its name, so that no name a spec gives can clash with the
// kernel's own parameters and locals.
std::string capture_buffer_name(const std::string& capture);

// An extent of a captured tensor's shape as the spec writes it: a positive
// integer, or text like "Sq + Sk - 1" (a linear form of B, Hq, Hkv, Sq, Sk).
LinearForm parse_extent(const std::string& text);

}  // namespace mfagen::expr
