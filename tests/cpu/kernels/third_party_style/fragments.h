// Written for mfagen's tests in the style of MLX's steel headers (not their
// code): integral constants built with decltype, fragments with `thread`
// methods, and a static constexpr MMA through thread_elements().
#pragma once
#include <metal_stdlib>
using namespace metal;

#pragma METAL internals : enable
namespace metal {
// Metal's library has neither of these; MLX-style code defines them itself.
template <typename... Ts>
struct make_void {
  typedef void type;
};
template <typename... Ts>
using void_t = typename make_void<Ts...>::type;
template <typename T>
struct is_empty : metal::bool_constant<__is_empty(T)> {};
}  // namespace metal

template <typename T>
constexpr constant bool is_accumulator = _disjunction<metal::is_same<T, float>, metal::is_same<T, int>>::value;
#pragma METAL internals : disable

namespace style {
using namespace metal;

// Constructors qualified for constant memory, as MLX's complex64_t has.
struct Complex {
  float re, im;
  constexpr Complex(float x) const constant : re(x), im(0) {}
  constexpr Complex(float x) : re(x), im(0) {}
};

template <typename T, T v>
struct integral_constant {
  static constant constexpr T value = v;
  METAL_FUNC constexpr operator T() const { return v; }
};
template <int v>
using Int = integral_constant<int, v>;
template <typename T, T a, typename U, U b>
METAL_FUNC constexpr auto operator+(integral_constant<T, a>, integral_constant<U, b>) {
  constexpr auto sum = a + b;
  return integral_constant<decltype(sum), sum>{};
}

// An alias template over vec exists to be deduced through (MLX's dtype_frag_t).
template <typename U>
using pair_t = typename metal::vec<U, 2>;
template <typename A>
METAL_FUNC float pair_sum(thread pair_t<A>& p) {
  return float(p[0]) + float(p[1]);
}

// One lane's two elements of an 8x8 tile, Apple's layout.
template <typename T>
struct Fragment {
  typedef vec<T, 2> frag_type;
  typedef simdgroup_matrix<T, 8, 8> mat_type;
  frag_type values;

  METAL_FUNC Fragment() thread : values(0) {}
  METAL_FUNC thread frag_type& at() thread { return values; }
  METAL_FUNC const thread frag_type& at() const thread { return values; }

  METAL_FUNC static constexpr void mma(thread frag_type& d, thread frag_type& a, thread frag_type& b) {
    mat_type d_mat = make_filled_simdgroup_matrix<T, 8>(T(0));
    mat_type a_mat, b_mat;
    reinterpret_cast<thread frag_type&>(a_mat.thread_elements()) = a;
    reinterpret_cast<thread frag_type&>(b_mat.thread_elements()) = b;
    simdgroup_multiply_accumulate(d_mat, a_mat, b_mat, d_mat);
    d = reinterpret_cast<thread frag_type&>(d_mat.thread_elements());
  }
};

template <typename T>
struct Tile {
  Fragment<T> a, b, d;  // members default-constructed by Fragment's `thread` constructor
};

}  // namespace style
