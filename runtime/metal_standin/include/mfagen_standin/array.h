// Metal stand-in: metal::array<T, N> (<metal_array>), a fixed-size aggregate
// (`array<int, 2>({1, stride})` builds one, as in Metal).
#pragma once
#include "scalar_types.h"

namespace metal {

template <class T, size_t N>
struct array {
  T __elems[N ? N : 1];
  METAL_FUNC static constexpr size_t size() { return N; }
  METAL_FUNC constexpr T& operator[](size_t i) { return __elems[i]; }
  METAL_FUNC constexpr const T& operator[](size_t i) const { return __elems[i]; }
  METAL_FUNC constexpr T* begin() { return __elems; }
  METAL_FUNC constexpr T* end() { return __elems + N; }
  METAL_FUNC constexpr const T* begin() const { return __elems; }
  METAL_FUNC constexpr const T* end() const { return __elems + N; }
};

}  // namespace metal
