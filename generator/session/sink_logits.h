// The sink logits of a call with attention sinks (DESIGN.md section 13): one
// float32 logit per q head, read from a .npy file, as `mfagen run` and future
// bindings take them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mfagen::session {

// <f4 logits of shape (heads_q,). Finite values and -inf (a head without a
// sink) are accepted; NaN and +inf are not. Throws CallError naming the file,
// the option and what was expected.
std::vector<float> read_sink_logits(const std::string& file, uint64_t heads_q);

}  // namespace mfagen::session
