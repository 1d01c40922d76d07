// Metal stand-in: <metal_type_traits> subset, in namespace metal.
// is_floating_point covers half and bfloat; is_vector / vec_elements /
// make_scalar cover the vector types of vector_types.h (boolN included).
#pragma once
#include "vector_types.h"

namespace metal {

template <class T, T v>
struct integral_constant {
  static constexpr T value = v;
  typedef T value_type;
  typedef integral_constant type;
  constexpr operator value_type() const { return value; }
  constexpr value_type operator()() const { return value; }
};
template <bool B>
using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;

template <bool B, class T = void>
struct enable_if {};
template <class T>
struct enable_if<true, T> {
  typedef T type;
};
template <bool B, class T = void>
using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F>
struct conditional {
  typedef T type;
};
template <class T, class F>
struct conditional<false, T, F> {
  typedef F type;
};
template <bool B, class T, class F>
using conditional_t = typename conditional<B, T, F>::type;

// Not in Metal's library (MLX's steel/utils/type_traits.h defines void_t,
// make_void, is_empty and is_empty_v in namespace metal itself): absent here
// too, so code that defines them compiles as it does on Metal.

template <class T>
struct type_identity {
  typedef T type;
};
template <class T>
using type_identity_t = typename type_identity<T>::type;

template <class T, class U>
struct is_same : false_type {};
template <class T>
struct is_same<T, T> : true_type {};
template <class T, class U>
inline constexpr bool is_same_v = is_same<T, U>::value;

// cv / reference / pointer manipulation
template <class T>
struct remove_const {
  typedef T type;
};
template <class T>
struct remove_const<const T> {
  typedef T type;
};
template <class T>
struct remove_volatile {
  typedef T type;
};
template <class T>
struct remove_volatile<volatile T> {
  typedef T type;
};
template <class T>
struct remove_cv {
  typedef typename remove_volatile<typename remove_const<T>::type>::type type;
};
template <class T>
struct remove_reference {
  typedef T type;
};
template <class T>
struct remove_reference<T&> {
  typedef T type;
};
template <class T>
struct remove_reference<T&&> {
  typedef T type;
};
template <class T>
struct remove_pointer {
  typedef T type;
};
template <class T>
struct remove_pointer<T*> {
  typedef T type;
};
template <class T>
struct remove_pointer<T* const> {
  typedef T type;
};
template <class T>
struct remove_pointer<T* volatile> {
  typedef T type;
};
template <class T>
struct remove_pointer<T* const volatile> {
  typedef T type;
};
template <class T>
struct remove_extent {
  typedef T type;
};
template <class T>
struct remove_extent<T[]> {
  typedef T type;
};
template <class T, ulong N>
struct remove_extent<T[N]> {
  typedef T type;
};
template <class T>
struct remove_all_extents {
  typedef T type;
};
template <class T>
struct remove_all_extents<T[]> {
  typedef typename remove_all_extents<T>::type type;
};
template <class T, ulong N>
struct remove_all_extents<T[N]> {
  typedef typename remove_all_extents<T>::type type;
};
template <class T>
struct add_const {
  typedef const T type;
};
template <class T>
struct add_volatile {
  typedef volatile T type;
};
template <class T>
struct add_cv {
  typedef const volatile T type;
};
template <class T>
struct add_pointer {
  typedef typename remove_reference<T>::type* type;
};
template <class T>
struct add_lvalue_reference {
  typedef T& type;
};
template <class T>
struct add_rvalue_reference {
  typedef T&& type;
};
// Address spaces (Metal: remove_address_space).
template <class T>
struct remove_address_space {
  typedef T type;
};
template <class T>
struct remove_address_space<__global T> {
  typedef T type;
};
template <class T>
struct remove_address_space<__local T> {
  typedef T type;
};
template <class T>
struct remove_address_space<__constant T> {
  typedef T type;
};
template <class T>
struct remove_address_space<__private T> {
  typedef T type;
};
template <class T>
struct remove_address_space<__generic T> {
  typedef T type;
};

template <class T>
using remove_const_t = typename remove_const<T>::type;
template <class T>
using remove_volatile_t = typename remove_volatile<T>::type;
template <class T>
using remove_cv_t = typename remove_cv<T>::type;
template <class T>
using remove_reference_t = typename remove_reference<T>::type;
template <class T>
using remove_cvref_t = remove_cv_t<remove_reference_t<T>>;
template <class T>
struct remove_cvref {
  typedef remove_cvref_t<T> type;
};
template <class T>
using remove_pointer_t = typename remove_pointer<T>::type;
template <class T>
using remove_extent_t = typename remove_extent<T>::type;
template <class T>
using remove_all_extents_t = typename remove_all_extents<T>::type;
template <class T>
using remove_address_space_t = typename remove_address_space<T>::type;
// Metal's library also spells it remove_addrspace (MLX's
// steel/utils/integral_constant.h uses metal::remove_addrspace_t).
template <class T>
struct remove_addrspace : remove_address_space<T> {};
template <class T>
using remove_addrspace_t = typename remove_address_space<T>::type;
template <class T>
using add_const_t = typename add_const<T>::type;
template <class T>
using add_volatile_t = typename add_volatile<T>::type;
template <class T>
using add_cv_t = typename add_cv<T>::type;
template <class T>
using add_pointer_t = typename add_pointer<T>::type;
template <class T>
using add_lvalue_reference_t = typename add_lvalue_reference<T>::type;
template <class T>
using add_rvalue_reference_t = typename add_rvalue_reference<T>::type;

template <class T>
struct is_const : false_type {};
template <class T>
struct is_const<const T> : true_type {};
template <class T>
struct is_volatile : false_type {};
template <class T>
struct is_volatile<volatile T> : true_type {};
template <class T>
struct is_pointer_helper : false_type {};
template <class T>
struct is_pointer_helper<T*> : true_type {};
template <class T>
struct is_pointer : is_pointer_helper<remove_cv_t<T>> {};
template <class T>
struct is_lvalue_reference : false_type {};
template <class T>
struct is_lvalue_reference<T&> : true_type {};
template <class T>
struct is_rvalue_reference : false_type {};
template <class T>
struct is_rvalue_reference<T&&> : true_type {};
template <class T>
struct is_reference : bool_constant<is_lvalue_reference<T>::value || is_rvalue_reference<T>::value> {};
template <class T>
struct is_array : false_type {};
template <class T>
struct is_array<T[]> : true_type {};
template <class T, ulong N>
struct is_array<T[N]> : true_type {};
template <class T>
struct is_void : is_same<void, remove_cv_t<T>> {};

template <class T, class U = remove_reference_t<T>>
struct __mf_decay {
  typedef conditional_t<is_array<U>::value, remove_extent_t<U>*, remove_cv_t<U>> type;
};
template <class T>
struct decay {
  typedef typename __mf_decay<T>::type type;
};
template <class T>
using decay_t = typename decay<T>::type;

// Categories. half and bfloat are floating point; bool and the char types
// are integral; vectors are neither (use is_vector / make_scalar).
template <class T>
struct is_floating_point
    : bool_constant<is_same<remove_cv_t<T>, float>::value || is_same<remove_cv_t<T>, half>::value ||
                    is_same<remove_cv_t<T>, bfloat>::value> {};
template <class T>
struct is_integral : bool_constant<__is_integral(remove_cv_t<T>)> {};
template <class T>
struct is_arithmetic : bool_constant<is_integral<T>::value || is_floating_point<T>::value> {};
template <class T, bool = __is_integral(T)>
struct __mf_signed_int : false_type {};
template <class T>
struct __mf_signed_int<T, true> : bool_constant<(static_cast<T>(-1) < static_cast<T>(0))> {};
template <class T>
struct is_signed : bool_constant<is_floating_point<T>::value || __mf_signed_int<remove_cv_t<T>>::value> {};
template <class T>
struct is_unsigned : bool_constant<is_integral<T>::value && !__mf_signed_int<remove_cv_t<T>>::value> {};
template <class T>
struct is_enum : bool_constant<__is_enum(T)> {};
template <class T>
struct is_class : bool_constant<__is_class(T)> {};
template <class T>
struct is_union : bool_constant<__is_union(T)> {};
template <class T>
struct is_trivial : bool_constant<__is_trivial(T)> {};
template <class T>
struct is_trivially_copyable : bool_constant<__is_trivially_copyable(T)> {};
template <class T>
struct is_standard_layout : bool_constant<__is_standard_layout(T)> {};
template <class B, class D>
struct is_base_of : bool_constant<__is_base_of(B, D)> {};
template <class F, class T>
struct is_convertible : bool_constant<__is_convertible_to(F, T)> {};
template <class T, class... A>
struct is_constructible : bool_constant<__is_constructible(T, A...)> {};
template <class T, class U>
struct is_assignable : bool_constant<__is_assignable(T, U)> {};
template <class T>
struct is_default_constructible : is_constructible<T> {};
template <class T>
struct is_trivially_constructible : bool_constant<__is_trivially_constructible(T)> {};
template <class T>
struct underlying_type {
  typedef __underlying_type(T) type;
};
template <class T>
using underlying_type_t = typename underlying_type<T>::type;

template <class T>
struct is_vector : bool_constant<::__mf_vt<remove_cv_t<T>>::is_vec> {};
template <class T>
struct vec_elements : integral_constant<int, ::__mf_vt<remove_cv_t<T>>::n> {};
template <class T>
struct make_scalar {
  typedef typename ::__mf_vt<remove_cv_t<T>>::lelem type;
};
template <class T>
using make_scalar_t = typename make_scalar<T>::type;
template <class T>
struct is_scalar : bool_constant<is_arithmetic<T>::value || __is_enum(T) || is_pointer<T>::value> {};
template <class T>
struct is_fundamental : bool_constant<is_arithmetic<T>::value || is_void<T>::value> {};

template <class T>
inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T>
inline constexpr bool is_integral_v = is_integral<T>::value;
template <class T>
inline constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T>
inline constexpr bool is_signed_v = is_signed<T>::value;
template <class T>
inline constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class T>
inline constexpr bool is_const_v = is_const<T>::value;
template <class T>
inline constexpr bool is_volatile_v = is_volatile<T>::value;
template <class T>
inline constexpr bool is_pointer_v = is_pointer<T>::value;
template <class T>
inline constexpr bool is_reference_v = is_reference<T>::value;
template <class T>
inline constexpr bool is_lvalue_reference_v = is_lvalue_reference<T>::value;
template <class T>
inline constexpr bool is_rvalue_reference_v = is_rvalue_reference<T>::value;
template <class T>
inline constexpr bool is_array_v = is_array<T>::value;
template <class T>
inline constexpr bool is_void_v = is_void<T>::value;
template <class T>
inline constexpr bool is_enum_v = is_enum<T>::value;
template <class T>
inline constexpr bool is_class_v = is_class<T>::value;
template <class T>
inline constexpr bool is_union_v = is_union<T>::value;
template <class T>
inline constexpr bool is_trivial_v = is_trivial<T>::value;
template <class T>
inline constexpr bool is_trivially_copyable_v = is_trivially_copyable<T>::value;
template <class T>
inline constexpr bool is_standard_layout_v = is_standard_layout<T>::value;
template <class B, class D>
inline constexpr bool is_base_of_v = is_base_of<B, D>::value;
template <class F, class T>
inline constexpr bool is_convertible_v = is_convertible<F, T>::value;
template <class T, class... A>
inline constexpr bool is_constructible_v = is_constructible<T, A...>::value;
template <class T, class U>
inline constexpr bool is_assignable_v = is_assignable<T, U>::value;
template <class T>
inline constexpr bool is_default_constructible_v = is_default_constructible<T>::value;
template <class T>
inline constexpr bool is_vector_v = is_vector<T>::value;
template <class T>
inline constexpr int vec_elements_v = vec_elements<T>::value;
template <class T>
inline constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T>
inline constexpr bool is_fundamental_v = is_fundamental<T>::value;

// make_signed / make_unsigned (integer scalars and vectors).
template <class T>
struct make_unsigned {
  static_assert(__mf_false<T>, "metal::make_unsigned: T must be an integer type other than bool");
};
template <class T>
struct make_signed {
  static_assert(__mf_false<T>, "metal::make_signed: T must be an integer type other than bool");
};
#define __MF_SIGN_PAIR(S, U) \
  template <>                \
  struct make_unsigned<S> {  \
    typedef U type;          \
  };                         \
  template <>                \
  struct make_unsigned<U> {  \
    typedef U type;          \
  };                         \
  template <>                \
  struct make_signed<S> {    \
    typedef S type;          \
  };                         \
  template <>                \
  struct make_signed<U> {    \
    typedef S type;          \
  };
__MF_SIGN_PAIR(char, uchar)
__MF_SIGN_PAIR(short, ushort)
__MF_SIGN_PAIR(int, uint)
__MF_SIGN_PAIR(long, ulong)
#undef __MF_SIGN_PAIR
template <>
struct make_unsigned<signed char> {
  typedef uchar type;
};
template <class T>
struct make_unsigned<const T> {
  typedef const typename make_unsigned<T>::type type;
};
template <class T>
struct make_signed<const T> {
  typedef const typename make_signed<T>::type type;
};
template <class E, int N>
struct make_unsigned<::__mf_ext_vec<E, N>> {
  typedef ::__mf_ext_vec<typename make_unsigned<E>::type, N> type;
};
template <class E, int N>
struct make_signed<::__mf_ext_vec<E, N>> {
  typedef ::__mf_ext_vec<typename make_signed<E>::type, N> type;
};
template <class T>
using make_unsigned_t = typename make_unsigned<T>::type;
template <class T>
using make_signed_t = typename make_signed<T>::type;

template <class... B>
struct conjunction : true_type {};
template <class B1, class... B>
struct conjunction<B1, B...> : conditional_t<bool(B1::value), conjunction<B...>, B1> {};
template <class... B>
struct disjunction : false_type {};
template <class B1, class... B>
struct disjunction<B1, B...> : conditional_t<bool(B1::value), B1, disjunction<B...>> {};
template <class B>
struct negation : bool_constant<!bool(B::value)> {};
// Metal's library-internal spellings, visible to code between
// `#pragma METAL internals : enable` and `: disable` (MLX's atomic.h uses
// _disjunction). The stand-in does not model the pragma: they are always there.
template <class... B>
struct _conjunction : conjunction<B...> {};
template <class... B>
struct _disjunction : disjunction<B...> {};
template <class B>
struct _negation : negation<B> {};
template <class... B>
inline constexpr bool conjunction_v = conjunction<B...>::value;
template <class... B>
inline constexpr bool disjunction_v = disjunction<B...>::value;
template <class B>
inline constexpr bool negation_v = negation<B>::value;

template <class T>
add_rvalue_reference_t<T> declval() noexcept;

template <class T>
METAL_FUNC constexpr remove_reference_t<T>&& move(T&& t) noexcept {
  return static_cast<remove_reference_t<T>&&>(t);
}
// No metal::forward: MLX's rope.metal declares `constant bool forward
// [[function_constant(1)]]` at global scope and reads it as `forward` under
// `using namespace metal;`, which Apple's compiler accepts (MLX ships it), so
// Metal's library declares nothing named `forward` in namespace metal.

}  // namespace metal
