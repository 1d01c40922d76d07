// Counted work read back from a profile's JSON (`mfagen profile --json-out`,
// `tools/profile_peers --out-json`): counting is slow, predicting is not, so
// `mfagen profile --from FILE.json` re-predicts saved counts with the current
// model and chips. Errors name the file and the JSON path.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "profile/kernel_work.h"

namespace mfagen::profile {

class WorkJsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every kernel's counted work in `text` ({"kernels": [...]}, as to_json writes it).
std::vector<KernelWork> work_from_json(const std::string& text, const std::string& file_name);

}  // namespace mfagen::profile
