// The block tables a module compiled for profiling exports (kernel_abi.h,
// "profile tables"), read once when the module loads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mfagen/cpu/kernel_abi.h"
#include "mfagen/cpu/profile_ops.h"

namespace mfagen::cpu {

struct ProfileTable {
  struct Function {
    std::string name;
    uint32_t first_block = 0, blocks = 0, registers = 0;
  };
  std::vector<Function> functions;
  // Per counted block (global index): its ops as (op, count) pairs.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> block_ops;

  // The tables of a dlopen'ed module, or nullopt if it was not compiled for profiling.
  static std::optional<ProfileTable> read(void* handle);
  // Estimated registers of kernel `entry` (its entry thunk's record, which
  // includes the kernel function the thunk calls).
  uint32_t registers_of(const std::string& entry) const;
};

}  // namespace mfagen::cpu
