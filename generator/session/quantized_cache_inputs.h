// Quantized k and v caches (spec kv_dtype q8_0, q4_0, fp8_e4m3; DESIGN.md
// section 13) read from .npy files of their raw stored rows, as `mfagen run`
// and future bindings take them: uint8 arrays whose last axis is a row's
// bytes (q8_0: 34 per 32 values, q4_0: 18 per 32 values, fp8: one per value),
// the other axes those of the dense, packed or paged layout.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "io/npy.h"
#include "mfagen/forward_dispatch.h"
#include "session/call_layout.h"

namespace mfagen::session {

struct QuantizedCache {
  TensorShape shape;             // the last axis in values (head dim), `what` naming the file and its format
  std::vector<std::byte> bytes;  // the stored rows, as the kernel reads them
};

// Throws CallError naming `what` ("--k k.npy") when the array is not uint8 or
// its last axis is not whole rows of the format.
QuantizedCache read_quantized_cache(const io::NpyArray& array, KvFormat format, const std::string& what);

// The format of a call's k and v: `given` (a --kv-dtype value), else, when k
// and v hold raw bytes (uint8), the one quantized format among `available`
// (the spec set's); std::nullopt for k and v in a float dtype. Throws
// CallError when the choice is missing, ambiguous or unknown, or the arrays
// do not fit it.
std::optional<KvFormat> choose_kv_format(const std::optional<std::string>& given, const io::NpyArray& k,
                                         const io::NpyArray& v, const std::vector<KvFormat>& available);

}  // namespace mfagen::session
