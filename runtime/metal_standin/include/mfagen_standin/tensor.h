// Metal stand-in: <metal_tensor> (Metal 4 tensors, DESIGN.md section 15), as
// Apple's headers spell them (facts from the Metal toolchain's metal_tensor
// and MPPTensorOpsMatMul2d.h of the 26.x SDK; the code is written here).
//
// * extents<IndexType, E...>: dimension 0 varies fastest, so a row-major
//   M x K matrix has extents (K, M); `dynamic_extent` marks a runtime extent.
//   dextents<IndexType, Rank> has every extent dynamic.
// * tensor<ElementType, Extents, Descriptor = tensor_handle, Tags...>: the
//   element type carries the address space (`tensor<device half, ...>`).
//   Descriptor is tensor_handle or tensor_inline; tensor_offset is a tag.
//   tensor_inline wraps a pointer the kernel holds (device, constant,
//   threadgroup or thread memory): (data, extents) with packed strides
//   (stride 0 is 1) or (data, extents, array of strides). Element
//   (i0, i1, ...) is data[i0 * stride[0] + i1 * stride[1] + ...].
// * slice(i...) starts a view at (i...) with what remains of each extent;
//   slice<E...>(i...) gives the view static extents (dynamic_extent: what
//   remains). Apple's comments call the latter static_slice, a name Metal's
//   headers do not have, so neither does this one.
// * tensor_handle (an MTLTensor bound as a kernel argument) needs host
//   binding the cpu backend does not offer: it is declared, not usable.
// Tensor operations treat elements outside a tensor's extents as zero and
// never write them (the edge checking of Apple's matmul2d).
#pragma once
#include "array.h"
#include "type_traits.h"

namespace metal {

inline constexpr size_t dynamic_extent = ~size_t(0);

template <class IndexType, size_t... Extents>
struct extents {
  static_assert(__is_integral(IndexType) && !__is_same(IndexType, bool), "extents: IndexType must be an integer type");
  typedef IndexType index_type;
  typedef size_t size_type;
  typedef size_t rank_type;
  static constexpr rank_type __rank = sizeof...(Extents);
  static constexpr rank_type __rank_dynamic = ((Extents == dynamic_extent ? 1 : 0) + ... + 0);
  IndexType __e[__rank ? __rank : 1];

  METAL_FUNC static constexpr rank_type rank() { return __rank; }
  METAL_FUNC static constexpr rank_type rank_dynamic() { return __rank_dynamic; }
  METAL_FUNC static constexpr size_t static_extent(rank_type r) {
    constexpr size_t s[] = {Extents..., 0};
    return s[r];
  }
  METAL_FUNC constexpr index_type extent(rank_type r) const { return __e[r]; }

  METAL_FUNC constexpr extents() : __e{} {
    for (rank_type r = 0; r < __rank; ++r)
      __e[r] = static_extent(r) == dynamic_extent ? IndexType(0) : IndexType(static_extent(r));
  }
  // Either every extent, or only the dynamic ones in order (as std::extents).
  template <class... I, class = enable_if_t<(sizeof...(I) > 0) && (sizeof...(I) == __rank || sizeof...(I) == __rank_dynamic)>>
  METAL_FUNC constexpr extents(I... values) : __e{} {
    const IndexType given[] = {static_cast<IndexType>(values)...};
    rank_type next = 0;
    for (rank_type r = 0; r < __rank; ++r) {
      if (sizeof...(I) == __rank)
        __e[r] = given[r];
      else
        __e[r] = static_extent(r) == dynamic_extent ? given[next++] : IndexType(static_extent(r));
    }
  }
};

template <class IndexType, size_t Rank>
struct __mf_dextents;
template <class I>
struct __mf_dextents<I, 1> {
  typedef extents<I, dynamic_extent> type;
};
template <class I>
struct __mf_dextents<I, 2> {
  typedef extents<I, dynamic_extent, dynamic_extent> type;
};
template <class I>
struct __mf_dextents<I, 3> {
  typedef extents<I, dynamic_extent, dynamic_extent, dynamic_extent> type;
};
template <class I>
struct __mf_dextents<I, 4> {
  typedef extents<I, dynamic_extent, dynamic_extent, dynamic_extent, dynamic_extent> type;
};
template <class IndexType, size_t Rank>
using dextents = typename __mf_dextents<IndexType, Rank>::type;

struct tensor_inline {};
struct tensor_handle {};
struct tensor_offset {};

template <class T>
inline constexpr bool __mf_is_tensor_descriptor = __is_same(T, tensor_handle) || __is_same(T, tensor_inline);

template <class ElementType, class Extents, class Descriptor = tensor_handle, class... Tags>
struct tensor {
  static_assert(__mf_is_tensor_descriptor<Descriptor>,
                "tensor: Descriptor template parameter must be one of tensor_handle or tensor_inline");
  static_assert(__is_same(Descriptor, tensor_inline),
                "tensor_handle (an MTLTensor kernel argument) is not supported by the cpu backend: wrap the buffer "
                "in a tensor_inline");
};

template <class T>
struct __mf_tensor_addrspace_ok : true_type {};  // thread, device, constant, threadgroup: all are legal inline

template <class ElementType, class Extents>
struct tensor<ElementType, Extents, tensor_inline> {
  typedef ElementType element_type;
  typedef __mf_unqual<ElementType> value_type;
  typedef Extents extents_type;
  typedef typename Extents::index_type index_type;
  typedef typename Extents::rank_type rank_type;
  typedef tensor_inline descriptor_type;
  static constexpr rank_type __rank = Extents::__rank;
  static_assert(__rank >= 1 && __rank <= 16, "tensor: rank must be 1 to 16");

  ElementType* __data;
  Extents __ext;
  index_type __stride[__rank];

  METAL_FUNC tensor() : __data(nullptr), __ext(), __stride{} {}
  METAL_FUNC tensor(ElementType* data, Extents e) : __data(data), __ext(e), __stride{} {
    index_type s = 1;
    for (rank_type r = 0; r < __rank; ++r) {
      __stride[r] = s;
      s *= __ext.extent(r);
    }
  }
  template <class S>
  METAL_FUNC tensor(ElementType* data, Extents e, array<S, __rank> strides) : __data(data), __ext(e), __stride{} {
    for (rank_type r = 0; r < __rank; ++r) __stride[r] = static_cast<index_type>(strides[r]);
  }

  METAL_FUNC static constexpr rank_type get_rank() { return __rank; }
  METAL_FUNC constexpr Extents get_extents() const { return __ext; }
  METAL_FUNC constexpr Extents extents() const { return __ext; }  // the spelling of Apple's header comments
  METAL_FUNC constexpr index_type get_extent(rank_type r) const { return __ext.extent(r); }
  METAL_FUNC constexpr index_type get_stride(rank_type r) const { return __stride[r]; }
  METAL_FUNC ElementType* get_data() const { return __data; }

  // slice<E...>(i...): static extents E (dynamic_extent: what remains).
  template <size_t... E, class... I,
            class = enable_if_t<sizeof...(E) == __rank && sizeof...(I) == __rank && (__is_integral(I) && ...)>>
  METAL_FUNC tensor<ElementType, metal::extents<index_type, E...>, tensor_inline> slice(I... origin) const {
    const index_type o[] = {static_cast<index_type>(origin)...};
    constexpr size_t fixed[] = {E...};
    tensor<ElementType, metal::extents<index_type, E...>, tensor_inline> view;
    long offset = 0;
    for (rank_type r = 0; r < __rank; ++r) {
      offset += long(o[r]) * long(__stride[r]);
      view.__stride[r] = __stride[r];
      const index_type rest = __ext.extent(r) > o[r] ? index_type(__ext.extent(r) - o[r]) : index_type(0);
      view.__ext.__e[r] = fixed[r] == dynamic_extent ? rest : index_type(fixed[r]);
    }
    view.__data = __data + offset;
    return view;
  }
  // slice(i...): every extent what remains.
  template <class... I, class = enable_if_t<sizeof...(I) == __rank && (__is_integral(I) && ...)>>
  METAL_FUNC tensor<ElementType, dextents<index_type, __rank>, tensor_inline> slice(I... origin) const {
    return __mf_dynamic_slice(origin...);
  }

  template <class... I>
  METAL_FUNC tensor<ElementType, dextents<index_type, __rank>, tensor_inline> __mf_dynamic_slice(I... origin) const {
    const index_type o[] = {static_cast<index_type>(origin)...};
    tensor<ElementType, dextents<index_type, __rank>, tensor_inline> view;
    long offset = 0;
    for (rank_type r = 0; r < __rank; ++r) {
      offset += long(o[r]) * long(__stride[r]);
      view.__stride[r] = __stride[r];
      view.__ext.__e[r] = __ext.extent(r) > o[r] ? index_type(__ext.extent(r) - o[r]) : index_type(0);
    }
    view.__data = __data + offset;
    return view;
  }

  // Stand-in internals for tensor operations (rank 2): element (i0, i1) or
  // zero outside the extents; writes outside the extents are dropped.
  // Rank 1 tensors take i1 = 0.
  METAL_FUNC bool __mf_inside(long i0, long i1) const {
    if (i0 < 0 || i1 < 0 || i0 >= long(__ext.extent(0))) return false;
    return __rank < 2 ? i1 == 0 : i1 < long(__ext.extent(__rank < 2 ? 0 : 1));
  }
  METAL_FUNC long __mf_offset(long i0, long i1) const {
    return i0 * long(__stride[0]) + (__rank < 2 ? 0l : i1 * long(__stride[__rank < 2 ? 0 : 1]));
  }
  METAL_FUNC value_type __mf_read(long i0, long i1) const {
    if (!__mf_inside(i0, i1)) return static_cast<value_type>(0);
    return __data[__mf_offset(i0, i1)];
  }
  template <class V>
  METAL_FUNC void __mf_write(long i0, long i1, V v) const {
    if (__mf_inside(i0, i1)) __data[__mf_offset(i0, i1)] = static_cast<value_type>(v);
  }
};

// `auto t = tensor(ptr, dextents<int, 2>{cols, rows}, array<int, 2>{1, ld});`
// (class template argument deduction, as Apple's kernels write it): an
// inline tensor over the pointer's element type and address space.
template <class ElementType, class Extents>
tensor(ElementType*, Extents) -> tensor<ElementType, Extents, tensor_inline>;
template <class ElementType, class Extents, class S, size_t R>
tensor(ElementType*, Extents, array<S, R>) -> tensor<ElementType, Extents, tensor_inline>;

template <class T>
struct is_tensor_inline : false_type {};
template <class E, class X>
struct is_tensor_inline<tensor<E, X, tensor_inline>> : true_type {};
template <class T>
inline constexpr bool is_tensor_inline_v = is_tensor_inline<__mf_unqual<T>>::value;
template <class T>
struct is_tensor_handle : false_type {};
template <class T>
inline constexpr bool is_tensor_handle_v = is_tensor_handle<__mf_unqual<T>>::value;
template <class T>
struct has_tensor_offset : false_type {};
template <class T>
inline constexpr bool has_tensor_offset_v = has_tensor_offset<__mf_unqual<T>>::value;

}  // namespace metal
