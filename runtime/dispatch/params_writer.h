// Lays out a kernel's parameter struct byte for byte as Metal does: each
// field at its natural alignment, the struct padded to its largest alignment.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace mfagen {

class ParamsWriter {
 public:
  template <class T>
  ParamsWriter& put(T value) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "params hold 4- and 8-byte scalars");
    bytes_.resize((bytes_.size() + sizeof(T) - 1) / sizeof(T) * sizeof(T));
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(&bytes_[at], &value, sizeof(T));
    return *this;
  }
  std::vector<std::byte> finish(size_t struct_alignment) {
    bytes_.resize((bytes_.size() + struct_alignment - 1) / struct_alignment * struct_alignment);
    return std::move(bytes_);
  }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace mfagen
