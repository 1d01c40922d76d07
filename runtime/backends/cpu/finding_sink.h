// Collects detector findings from all workers of a launch: keeps the first
// occurrence of each distinct (kind, location) and counts all of them.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "mfagen/cpu/backend.h"

namespace mfagen::cpu {

class FindingSink {
 public:
  explicit FindingSink(size_t max_kept) : max_kept_(max_kept) {}

  // True if (kind, location) was not seen before (the caller may then spend
  // time describing it).
  bool first_time(FindingKind kind, const std::string& location);
  void report(Finding finding);
  void count_repeat() { ++total_; }

  std::vector<Finding> take() { return std::move(kept_); }
  uint64_t total() const { return total_; }

 private:
  size_t max_kept_;
  std::mutex mutex_;
  std::map<std::pair<FindingKind, std::string>, bool> seen_;
  std::vector<Finding> kept_;
  std::atomic<uint64_t> total_{0};
};

}  // namespace mfagen::cpu
