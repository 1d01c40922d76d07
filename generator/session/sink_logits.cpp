#include "session/sink_logits.h"

#include <fmt/format.h>

#include <cmath>

#include "io/npy.h"
#include "session/call_error.h"

namespace mfagen::session {

std::vector<float> read_sink_logits(const std::string& file, uint64_t heads_q) {
  const std::string what = "--sinks " + file;
  if (file.empty())
    throw CallError("the selected kernel has attention sinks: give --sinks S.npy (one logit per q head)");
  const io::NpyArray array = io::read_npy(file);
  if (array.dtype != "<f4") throw CallError(fmt::format("{}: expected dtype <f4, found {}", what, array.dtype));
  if (array.shape != std::vector<uint64_t>{heads_q})
    throw CallError(fmt::format("{}: expected shape ({},), one logit per q head, found {}", what, heads_q,
                                io::shape_repr(array.shape)));
  std::vector<float> logits = array.values<float>();
  for (float x : logits)
    if (std::isnan(x) || x == INFINITY)
      throw CallError(fmt::format("{}: holds NaN or +inf; a sink logit is finite, or -inf for no sink", what));
  return logits;
}

}  // namespace mfagen::session
