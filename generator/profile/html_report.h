// `mfagen profile --html`: one self-contained HTML5 page comparing profiled
// kernels: a roofline per chip (inline SVG), the counted work side by side,
// and the predictions. No external resources and no JavaScript, so the file
// can be mailed, archived or opened offline; output is deterministic (same
// input, same bytes) so reports diff cleanly. Every time in it is a cost
// model prediction, never a measurement on an Apple GPU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profile/profile_json.h"

namespace mfagen::profile {

std::string html_report(const std::vector<ProfiledKernel>& kernels, std::string_view title);

}  // namespace mfagen::profile
