// Metal stand-in: matrix<T, Cols, Rows> and the floatCxR / halfCxR /
// bfloatCxR typedefs (C, R in 2..4), as llama.cpp's dequantizers use them.
//
// Column-major like Metal: m[c] is column c, a vec<T, Rows>. Supported:
// the diagonal constructor matrix(s), construction from Cols columns or from
// Cols*Rows scalars (column by column), explicit element-wise conversion from
// another element type ((float4x4)h), indexing in every address space,
// m + m, m - m, -m, m * s, s * m, m * v, v * m, m * m, m *= s, transpose().
// The default constructor leaves the elements undefined, as in Metal.
#pragma once
#include "vector_types.h"

namespace metal {

template <class T, int Cols, int Rows>
struct matrix {
  static_assert(Cols >= 2 && Cols <= 4 && Rows >= 2 && Rows <= 4, "metal::matrix: Cols and Rows must be 2, 3 or 4");
  typedef vec<T, Rows> column_type;
  column_type columns[Cols];

  matrix() = default;
  METAL_FUNC explicit matrix(T diagonal) {
    for (int c = 0; c < Cols; ++c)
      for (int r = 0; r < Rows; ++r) columns[c][r] = c == r ? diagonal : T(0);
  }
  template <class... C, __mf_if<sizeof...(C) == Cols && (__is_same(__mf_unqual<C>, column_type) && ...)> = 0>
  METAL_FUNC matrix(C... c) : columns{c...} {}
  template <class... S, __mf_if<sizeof...(S) == Cols * Rows> = 0>
  METAL_FUNC matrix(S... scalars) {
    const T values[] = {static_cast<T>(scalars)...};
    for (int c = 0; c < Cols; ++c)
      for (int r = 0; r < Rows; ++r) columns[c][r] = values[c * Rows + r];
  }
  template <class U, __mf_if<!__is_same(U, T)> = 0>
  METAL_FUNC explicit matrix(const matrix<U, Cols, Rows>& other) {
    for (int c = 0; c < Cols; ++c)
      for (int r = 0; r < Rows; ++r) columns[c][r] = static_cast<T>(other.columns[c][r]);
  }

  METAL_FUNC column_type& operator[](int c) { return columns[c]; }
  METAL_FUNC const column_type& operator[](int c) const { return columns[c]; }
  METAL_FUNC const __constant column_type& operator[](int c) const __constant { return columns[c]; }
};

#define __MF_MATRIX_TYPEDEFS(ELEM)             \
  typedef matrix<ELEM, 2, 2> ELEM##2x2;        \
  typedef matrix<ELEM, 2, 3> ELEM##2x3;        \
  typedef matrix<ELEM, 2, 4> ELEM##2x4;        \
  typedef matrix<ELEM, 3, 2> ELEM##3x2;        \
  typedef matrix<ELEM, 3, 3> ELEM##3x3;        \
  typedef matrix<ELEM, 3, 4> ELEM##3x4;        \
  typedef matrix<ELEM, 4, 2> ELEM##4x2;        \
  typedef matrix<ELEM, 4, 3> ELEM##4x3;        \
  typedef matrix<ELEM, 4, 4> ELEM##4x4;
__MF_MATRIX_TYPEDEFS(float)
__MF_MATRIX_TYPEDEFS(half)
__MF_MATRIX_TYPEDEFS(bfloat)
#undef __MF_MATRIX_TYPEDEFS

template <class T, int C, int R>
METAL_FUNC matrix<T, C, R> operator+(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = a.columns[c] + b.columns[c];
  return m;
}
template <class T, int C, int R>
METAL_FUNC matrix<T, C, R> operator-(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = a.columns[c] - b.columns[c];
  return m;
}
template <class T, int C, int R>
METAL_FUNC matrix<T, C, R> operator-(const matrix<T, C, R>& a) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = -a.columns[c];
  return m;
}
template <class T, int C, int R>
METAL_FUNC matrix<T, C, R> operator*(const matrix<T, C, R>& a, __mf_id<T> s) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = a.columns[c] * s;
  return m;
}
template <class T, int C, int R>
METAL_FUNC matrix<T, C, R> operator*(__mf_id<T> s, const matrix<T, C, R>& a) {
  return a * s;
}
template <class T, int C, int R>
METAL_FUNC matrix<T, C, R>& operator*=(matrix<T, C, R>& a, __mf_id<T> s) {
  return a = a * s;
}
// matrix (C columns of R) times a C-vector: an R-vector.
template <class T, int C, int R>
METAL_FUNC vec<T, R> operator*(const matrix<T, C, R>& a, const vec<T, C>& v) {
  vec<T, R> out = a.columns[0] * v[0];
  for (int c = 1; c < C; ++c) out += a.columns[c] * v[c];
  return out;
}
// An R-vector times a matrix: a C-vector of column dot products.
template <class T, int C, int R>
METAL_FUNC vec<T, C> operator*(const vec<T, R>& v, const matrix<T, C, R>& a) {
  vec<T, C> out;
  for (int c = 0; c < C; ++c) {
    T sum = v[0] * a.columns[c][0];
    for (int r = 1; r < R; ++r) sum += v[r] * a.columns[c][r];
    out[c] = sum;
  }
  return out;
}
template <class T, int K, int R, int C>
METAL_FUNC matrix<T, C, R> operator*(const matrix<T, K, R>& a, const matrix<T, C, K>& b) {
  matrix<T, C, R> m;
  for (int c = 0; c < C; ++c) m.columns[c] = a * b.columns[c];
  return m;
}
template <class T, int C, int R>
METAL_FUNC matrix<T, R, C> transpose(const matrix<T, C, R>& a) {
  matrix<T, R, C> m;
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r) m.columns[r][c] = a.columns[c][r];
  return m;
}

}  // namespace metal

using metal::matrix;
#define __MF_MATRIX_USING(ELEM) \
  using metal::ELEM##2x2;       \
  using metal::ELEM##2x3;       \
  using metal::ELEM##2x4;       \
  using metal::ELEM##3x2;       \
  using metal::ELEM##3x3;       \
  using metal::ELEM##3x4;       \
  using metal::ELEM##4x2;       \
  using metal::ELEM##4x3;       \
  using metal::ELEM##4x4;
__MF_MATRIX_USING(float)
__MF_MATRIX_USING(half)
__MF_MATRIX_USING(bfloat)
#undef __MF_MATRIX_USING
