// score_mod / mask_mod cases for the kernel tests (DESIGN.md section 13): the
// spec's expressions with their captured tensors and scalars, and the same
// functions written plainly in C++ for the float64 reference, so that the
// generated kernel is judged against an implementation that shares nothing
// with the expression compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "expr/score_functions.h"

namespace mfagen::test {

struct ScoreFunctionCase {
  std::string recipe;             // for test names and messages
  expr::ScoreFunctions functions;  // what the spec says
  std::vector<std::vector<std::byte>> captures;  // each captured tensor's contents, row-major float32 / int32
  std::vector<float> scalars;
  // The float32 captured tensors' values as the reference functions read them
  // (shared, so that finite differences of the reference can perturb them);
  // nullptr for int32 tensors.
  std::vector<std::shared_ptr<std::vector<float>>> float_tables;
  // The reference's score_mod and mask_mod (empty: none).
  std::function<double(double, uint64_t, uint64_t, uint64_t, uint64_t)> score_mod;
  std::function<bool(uint64_t, uint64_t, uint64_t, uint64_t)> mask_mod;
};

// The sizes a recipe's tensors are made for.
struct RecipeShape {
  uint64_t batch = 1, heads_q = 1, seq_q = 1, seq_k = 1;
};

// Recipes of the issue: relative position bias (a table indexed by the
// clamped distance), document masking (per-token document ids of q and k),
// prefix-LM (per-sequence prefix lengths), T5-style bucketed bias (per head),
// and one that uses every kind of input at once (a bias table, a per-head
// scalar table, a runtime scalar, document ids, and a non-linear score).
std::shared_ptr<const ScoreFunctionCase> relative_bias_case(const RecipeShape& shape, uint64_t seed);
std::shared_ptr<const ScoreFunctionCase> document_mask_case(const RecipeShape& shape, uint64_t seed, int documents);
// Documents of `length` tokens each (a last shorter one), the same for q and k.
std::shared_ptr<const ScoreFunctionCase> aligned_documents_case(const RecipeShape& shape, uint64_t length);
std::shared_ptr<const ScoreFunctionCase> prefix_lm_case(const RecipeShape& shape, uint64_t seed);
std::shared_ptr<const ScoreFunctionCase> t5_bucket_case(const RecipeShape& shape, uint64_t seed);
std::shared_ptr<const ScoreFunctionCase> everything_case(const RecipeShape& shape, uint64_t seed);

// Built-in features written as expressions (the reference of these cases is
// the built-in feature's own, set on the problem by the test).
std::shared_ptr<const ScoreFunctionCase> causal_expression_case(const RecipeShape& shape);  // bottom_right
std::shared_ptr<const ScoreFunctionCase> window_expression_case(const RecipeShape& shape, int left, int right);
std::shared_ptr<const ScoreFunctionCase> softcap_expression_case(double cap);
std::shared_ptr<const ScoreFunctionCase> alibi_expression_case(const RecipeShape& shape, const std::vector<double>& slopes);

}  // namespace mfagen::test
