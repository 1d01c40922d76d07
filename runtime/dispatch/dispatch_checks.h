// The checks the dispatch planners share (forward_dispatch.cpp,
// cache_append_dispatch.cpp): sizes that overflow 64 bits and calls a kernel
// cannot take are DispatchErrors naming what is wrong.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "mfagen/forward_dispatch.h"

namespace mfagen::dispatch_checks {

inline void require(bool ok, const std::string& message) {
  if (!ok) throw DispatchError(message);
}

// The same with the message built only when the check fails: checks run per
// call (a serving step's cu_seqlens and block table) allocate nothing.
template <typename BuildMessage>
  requires std::is_invocable_r_v<std::string, BuildMessage>
inline void require(bool ok, BuildMessage&& build_message) {
  if (!ok) throw DispatchError(build_message());
}

inline uint64_t checked_mul(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw DispatchError(std::string(what) + ": size overflows 64 bits");
  return r;
}
inline uint64_t checked_add(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw DispatchError(std::string(what) + ": size overflows 64 bits");
  return r;
}

// Bytes from the first element to one past the last element a view touches.
inline uint64_t span_bytes(const std::array<uint64_t, 4>& extents, const std::array<uint64_t, 4>& strides,
                           uint64_t elem, std::string_view what) {
  uint64_t last = 0;
  for (int d = 0; d < 4; ++d) last = checked_add(last, checked_mul(extents[d] - 1, strides[d], what), what);
  return checked_mul(checked_add(last, 1, what), elem, what);
}
inline uint64_t span_bytes(const Strides3& s, uint64_t batch, uint64_t heads, uint64_t rows, uint64_t cols,
                           uint64_t elem, std::string_view what) {
  return span_bytes({batch, heads, rows, cols}, {s.batch, s.head, s.row, 1}, elem, what);
}

}  // namespace mfagen::dispatch_checks
