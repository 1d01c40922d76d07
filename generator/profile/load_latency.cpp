#include "profile/load_latency.h"

#include <algorithm>

namespace mfagen::profile {

double mean_load_latency_seconds(const Chip& c, const LaunchWork& l) {
  const double requested = static_cast<double>(l.device_bytes_read);
  if (requested <= 0) return 0;
  const double past_l1 =
      l.device_bytes_read_past_l1 > 0 ? std::min(requested, static_cast<double>(l.device_bytes_read_past_l1)) : requested;
  // Compulsory bytes include the written buffers; a read can only be as
  // compulsory as it is past L1.
  const double from_dram = std::min(past_l1, static_cast<double>(l.device_bytes_unique));
  const double from_l2 = past_l1 - from_dram;
  const double from_l1 = requested - past_l1;
  const double ns =
      (from_l1 * c.l1_latency_ns + from_l2 * c.l2_latency_ns + from_dram * c.dram_latency_ns) / requested;
  return ns * 1e-9;
}

double load_wait_seconds(const OpCounts& ops, double mean_latency_seconds) {
  const auto count = [&](Op op) { return ops[static_cast<uint32_t>(op)]; };
  const double loads = count(Op::device_load) + count(Op::sgm_load_device) + count(Op::generic_load);
  return loads / kLoadsInFlightPerSimdgroup * mean_latency_seconds;
}

}  // namespace mfagen::profile
