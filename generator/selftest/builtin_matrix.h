// The built-in correctness matrix of `mfagen selftest`: every dtype, head
// dims 64, 128 and 80, every causal mode, GQA, MQA and no-GQA kernels, each
// feature (bool and additive masks, window, softcap, ALiBi, attention sinks,
// lse on and off) alone and together, split-K decode and the backward. Shapes are small (tens
// of queries and keys) so the whole matrix runs in about a minute on the cpu
// backend with every detector on; they are ragged (not multiples of the
// tiles) and Sq != Sk, so partial blocks and both causal alignments count.
#pragma once

#include <string_view>
#include <vector>

#include "selftest/selftest_case.h"

namespace mfagen::selftest {

enum class MatrixSize { full, quick };

// The cases in a fixed order; --quick is a handful covering forward, a mask,
// decode and backward.
std::vector<SelftestCase> builtin_matrix(MatrixSize size);

// The cases whose name contains `substring` (all of them when it is empty).
std::vector<SelftestCase> filter_cases(std::vector<SelftestCase> cases, std::string_view substring);

}  // namespace mfagen::selftest
