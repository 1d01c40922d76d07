// Metal stand-in: visible_function_table<T> (MSL section 2.15), a table of
// visible function pointers bound like a buffer ([[buffer(n)]] by value).
//
// The kernel sees a 64-bit handle: here the device address of the table,
// its entry count first, then the function pointers. Nothing in mfagen binds
// one; kernels that declare one behind a false function constant
// (metal-flash-attention's fused activations) compile and run unchanged.
#pragma once
#include "scalar_types.h"

namespace metal {
template <class T>
struct visible_function_table {
  const __global ulong* __mf_table = nullptr;  // [size, entry 0, entry 1, ...]

  METAL_FUNC ulong size() const { return __mf_table ? __mf_table[0] : 0; }
  METAL_FUNC bool empty() const { return size() == 0; }
  METAL_FUNC T* operator[](uint index) const { return reinterpret_cast<T*>(__mf_table[1 + index]); }
};
}  // namespace metal

// The cpu backend's kernel thunk: a [[buffer]] parameter taken by value is
// such a handle, the bound 64-bit value reinterpreted.
template <class T>
inline constexpr bool __mf_is_buffer_handle = false;
template <class F>
inline constexpr bool __mf_is_buffer_handle<::metal::visible_function_table<F>> = true;
template <class T>
inline T __mf_buffer_handle(unsigned long bound) {
  static_assert(__mf_is_buffer_handle<T>,
                "a [[buffer]] parameter passed by value must be a visible_function_table (MSL section 2.15)");
  return __builtin_bit_cast(T, bound);
}
