// What every fuzz target asserts: the input is accepted, or rejected with
// the one documented exception type and a message naming the input; any
// other exception escaping is a crash the fuzzer reports (an unclear error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace mfagen::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Aborts (a finding) when a rejection's message lacks `must_mention`.
inline void expect_clear_error(const std::exception& e, std::string_view must_mention) {
  const std::string_view message = e.what();
  if (message.empty() || (!must_mention.empty() && message.find(must_mention) == std::string_view::npos)) {
    std::fprintf(stderr, "unclear error (expected it to mention '%.*s'): %s\n", int(must_mention.size()),
                 must_mention.data(), e.what());
    std::abort();
  }
}

}  // namespace mfagen::fuzz
