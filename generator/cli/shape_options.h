// The call-shape options `mfagen explain`, `profile` and `tune` share:
// --batch, --heads-q, --heads-kv, --seq-q, --seq-k (and the window sizes
// where a command takes them).
#pragma once

#include "plan/forward_cost.h"

namespace CLI {
class App;
}

namespace mfagen::cli {

void add_shape_options(CLI::App& command, plan::CostShape& shape);
// --window-left / --window-right, for window kernels.
void add_window_options(CLI::App& command, plan::CostShape& shape);

}  // namespace mfagen::cli
