// A call the user asked for that the spec set or the shape cannot serve
// (no kernel matches, shapes disagree): the user's to fix, exit status 1.
#pragma once

#include <stdexcept>

namespace mfagen::session {

class CallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mfagen::session
