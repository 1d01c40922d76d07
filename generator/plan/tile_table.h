#pragma once
// Which row of the tile table (tile_table.json) serves a kernel: shared by the
// planner, which reads the embedded table, and `mfagen tune --write-table`,
// which rewrites the row a tuned kernel falls in.
#include <nlohmann/json_fwd.hpp>

#include "spec/kernel_spec.h"

namespace mfagen::plan {

// A row serves the kernels of its "kind" whose widest head dim is at most its
// "max_head_dim"; a row with a "target" serves that family only, one with
// "dtypes" those element types only, one with "causal" those causal modes
// only, and one with key groups the kernels that can split key blocks only.
// The planner takes the first row that serves a kernel, so specific rows go
// before general ones.
bool table_row_serves(const nlohmann::json& row, const spec::KernelSpec& kernel);

}  // namespace mfagen::plan
