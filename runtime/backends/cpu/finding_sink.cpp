#include "finding_sink.h"

#include <fmt/format.h>

namespace mfagen::cpu {

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::out_of_bounds: return "out-of-bounds access";
    case FindingKind::data_race: return "threadgroup data race";
    case FindingKind::barrier_divergence: return "barrier divergence";
    case FindingKind::uninitialized_read: return "uninitialized threadgroup read";
    case FindingKind::tensor_op: return "tensor operation undefined behaviour";
  }
  return "finding";
}

std::string Finding::to_string() const {
  return fmt::format("{}: {}: kernel {}, threadgroup ({},{},{}), thread ({},{},{}) [index {}], address 0x{:x}{}{}{}{}",
                     location.empty() ? "<unknown location>" : location, cpu::to_string(kind), kernel, threadgroup.x,
                     threadgroup.y, threadgroup.z, thread.x, thread.y, thread.z, thread_index, address,
                     region.empty() ? "" : ", ", region, detail.empty() ? "" : ": ", detail);
}

bool FindingSink::first_time(FindingKind kind, const std::string& location) {
  std::lock_guard lock(mutex_);
  ++total_;
  return seen_.emplace(std::make_pair(kind, location), true).second;
}

void FindingSink::report(Finding finding) {
  std::lock_guard lock(mutex_);
  if (kept_.size() < max_kept_) kept_.push_back(std::move(finding));
}

}  // namespace mfagen::cpu
