// A content digest (BLAKE3, from LLVM) of a sequence of parts, for cache
// keys and cache-file checksums. Each part is length-prefixed, so that no two
// sequences of parts hash alike ("ab" + "c" is not "a" + "bc").
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace mfagen::check {

class Digest {
 public:
  Digest();
  ~Digest();
  Digest& add(std::string_view part);
  std::string hex() const;  // 64 lowercase hex digits

 private:
  struct Hasher;
  std::unique_ptr<Hasher> hasher_;
};

}  // namespace mfagen::check
