#include "check/digest.h"

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/BLAKE3.h>

namespace mfagen::check {

struct Digest::Hasher {
  llvm::BLAKE3 blake3;
};

Digest::Digest() : hasher_(std::make_unique<Hasher>()) {}
Digest::~Digest() = default;

Digest& Digest::add(std::string_view part) {
  hasher_->blake3.update(fmt::format("{}:", part.size()));
  hasher_->blake3.update(llvm::StringRef(part.data(), part.size()));
  return *this;
}

std::string Digest::hex() const { return llvm::toHex(hasher_->blake3.final(), /*LowerCase=*/true); }

}  // namespace mfagen::check
