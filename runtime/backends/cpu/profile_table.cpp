#include "profile_table.h"

#include <dlfcn.h>

#include <algorithm>

namespace mfagen::cpu {

std::optional<ProfileTable> ProfileTable::read(void* handle) {
  const auto* count = static_cast<const uint32_t*>(dlsym(handle, "__mf_profile_function_count"));
  const auto* functions = static_cast<const abi::ProfileFunction*>(dlsym(handle, "__mf_profile_functions"));
  const auto* begin = static_cast<const uint32_t*>(dlsym(handle, "__mf_profile_block_begin"));
  const auto* entries = static_cast<const uint32_t*>(dlsym(handle, "__mf_profile_entries"));
  if (!count || !begin || !entries || (*count && !functions)) return std::nullopt;
  ProfileTable table;
  uint32_t blocks = 0;
  for (uint32_t f = 0; f < *count; ++f) {
    const abi::ProfileFunction& record = functions[f];
    table.functions.push_back({record.name, record.first_block, record.blocks, record.registers});
    blocks = std::max(blocks, record.first_block + record.blocks);
  }
  table.block_ops.resize(blocks);
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t e = begin[b]; e < begin[b + 1]; ++e)
      if (entries[2 * e] < profile::kOpCount) table.block_ops[b].emplace_back(entries[2 * e], entries[2 * e + 1]);
  return table;
}

uint32_t ProfileTable::registers_of(const std::string& entry) const {
  // The pass gives the entry thunk the largest estimate of itself and the
  // kernel function it calls (ProfileCounters.cpp).
  for (const Function& f : functions)
    if (f.name == abi::kEntryPrefix + entry) return f.registers;
  return 0;
}

}  // namespace mfagen::cpu
