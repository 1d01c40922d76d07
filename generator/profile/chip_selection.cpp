#include "profile/chip_selection.h"

#include "profile/cost_model.h"

namespace mfagen::profile {

std::vector<Chip> select_chips(std::string_view names) {
  if (names == "all") return chips();
  std::vector<Chip> selected;
  while (!names.empty()) {
    const size_t comma = names.find(',');
    const std::string_view name = names.substr(0, comma);
    if (!name.empty()) selected.push_back(find_chip(name));
    names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
  }
  if (selected.empty()) throw std::invalid_argument("no chip named; give --chip all or chip names");
  return selected;
}

ProfiledKernel predict_on(KernelWork work, const std::vector<Chip>& chips) {
  ProfiledKernel k;
  for (const Chip& chip : chips) k.predictions.push_back(predict(chip, work));
  k.work = std::move(work);
  return k;
}

}  // namespace mfagen::profile
