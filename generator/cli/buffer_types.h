// Which .npy dtypes may be bound to a kernel's [[buffer(n)]] parameter, from
// the parameter's MSL type as written in the signature. Catching a float
// file bound to a `device half*` before the launch saves a confusing run.
//
// Element type -> dtype:
//   float <f4, half <f2, bfloat <u2 or <i2 (raw bits: NumPy has no bfloat16),
//   int <i4, uint <u4, short <i2, ushort <u2, char |i1, uchar |u1, bool |b1,
//   long <i8, ulong <u8 (and the intN_t/uintN_t spellings, atomic_* types).
// Vectors (float4, packed_half3, vec<float,4>) and matrices (float4x4) take
// their scalar's dtype with a multiple of their width in elements; a 3-wide
// vector is 4 elements wide in memory unless packed. Structs and template
// parameters are unknown: any dtype is accepted and the bytes pass through.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen::cli {

// "device const half*" -> "half", "constant Params&" -> "Params",
// "device metal::float4 *" -> "float4". Drops address spaces and qualifiers.
std::string pointee_type(std::string_view param_type);

struct BufferElement {
  std::string scalar;               // e.g. "float" for float4
  std::vector<std::string> dtypes;  // .npy dtypes holding that scalar
  uint32_t width = 1;               // scalars per element in memory
};

// The element of a buffer parameter, or nullopt if its layout is unknown.
std::optional<BufferElement> buffer_element(std::string_view param_type);

// Why an array of `dtype` with `count` elements cannot be bound to a
// parameter of `param_type` (a reference if `is_reference`), or "" if it can.
std::string buffer_mismatch(std::string_view param_type, bool is_reference, std::string_view dtype,
                            uint64_t count);

}  // namespace mfagen::cli
