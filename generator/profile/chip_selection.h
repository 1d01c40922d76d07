// Which chips a profile predicts for (`--chip NAME|all`), and the
// predictions of one counted call on each.
#pragma once

#include <string_view>
#include <vector>

#include "profile/chip.h"
#include "profile/profile_json.h"

namespace mfagen::profile {

// "all", or chip names separated by commas ("m1_max,M3 Max"); invalid_argument
// naming the valid chips otherwise.
std::vector<Chip> select_chips(std::string_view names);

ProfiledKernel predict_on(KernelWork work, const std::vector<Chip>& chips);

}  // namespace mfagen::profile
