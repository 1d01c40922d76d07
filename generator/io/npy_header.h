// The dictionary inside a .npy header. It is a Python literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// and writers other than NumPy vary key order, quotes and whitespace, so it
// is parsed as a (small) Python literal rather than matched as text.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::io {

struct NpyHeaderDict {
  std::string descr;  // as written, e.g. "<f4"; not yet checked for support
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

// Throws std::invalid_argument saying what is wrong (syntax error at a
// column, a missing or unexpected key, a value of the wrong kind).
NpyHeaderDict parse_npy_header_dict(std::string_view text);

}  // namespace mfagen::io
