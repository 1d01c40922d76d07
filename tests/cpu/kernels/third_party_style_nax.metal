// Constructs found in MLX's NAX kernels (steel/attn/nax.h,
// steel_attention_nax.h), written for mfagen's tests (none of MLX's code):
// each kernel computes something tests/cpu/third_party_style_test.cpp
// checks against plain C++.
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;

// An integral constant whose binary operator names the result type through
// metal::remove_addrspace_t (MLX's steel/utils/integral_constant.h).
template <typename T, T v>
struct constant_of {
  static constexpr constant T value = v;
};
template <typename T, T a, typename U, U b>
METAL_FUNC constexpr auto operator+(constant_of<T, a>, constant_of<U, b>) {
  constexpr auto res = a + b;
  using res_t = metal::remove_addrspace_t<decltype(res)>;
  return constant_of<res_t, res>{};
}
static_assert(is_same_v<metal::remove_addrspace_t<device float>, float>, "remove_addrspace_t<device float>");
static_assert(is_same_v<metal::remove_addrspace<threadgroup int>::type, int>, "remove_addrspace<threadgroup int>");

// A fragment of a template element type: `metal::vec<T, N> x{0};` (direct
// list, fewer elements than N) and `AccumType(frag[j])` (a template type
// constructed from a vector element).
template <typename T, typename AccumType>
METAL_FUNC AccumType fragment_idioms(T first) {
  metal::vec<AccumType, 2> sums{0};
  metal::vec<T, 4> frag = {first};  // first, then zeros
  vec<T, 4> more{first, T(1)};
  for (short j = 0; j < 4; j++) sums[j & 1] += AccumType(frag[j]) + AccumType(more[j]);
  return sums[0] * 10 + sums[1];
}

// out[lane * 6 + ...], one simdgroup.
kernel void nax_idioms(device float* out [[buffer(0)]], constant float* scale [[buffer(1)]],
                       constant int* count [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
  device float* o = out + lane * 6;
  o[0] = float(__metal_get_thread_index_in_simdgroup(ushort()));
  const metal::uniform<float> scale2 = make_uniform(scale[0]) * make_uniform(2.0f);
  o[1] = float(scale2) * float(lane);
  constexpr const uniform<int> step = make_uniform(4);
  const uniform<int> n = make_uniform(count[0]);
  int iterations = 0;
  for (int i = 0; i < n; i += step) ++iterations;
  o[2] = float(iterations);
  o[3] = float(decltype(constant_of<int, 3>{} + constant_of<int, 4>{})::value);
  o[4] = fragment_idioms<half, float>(half(lane));
  float2 xy = float2(1.0f, 2.0f), zw = float2(3.0f, 4.0f);
  float4 whole{xy, zw};  // vectors in the list: as written
  o[5] = whole.x + 10 * whole.w;
}

// C (16 x 32, row-major) = op(A) * op(B) through cooperative inputs of one
// matmul2d(16, 32, 16, TL, TR) in one simdgroup. A is stored 16 x 16 (k x m
// when TL), B 16 x 32 (32 x 16, n x k, when TR), both row-major. GUESS 0:
// the inputs are filled through get_multidimensional_index, the documented
// way (the stored operand's coordinates: dimension 0 is its column); GUESS
// 1: by MLX NAX's fragment positions (steel/attn/nax.h: lane l holds rows
// fm and fm + 8, columns fn..fn+3 of each 16 x 16 fragment of the stored
// operand), which only the default layout satisfies.
template <bool TL, bool TR, bool GUESS>
kernel void cooperative_inputs(device half* A [[buffer(0)]], device half* B [[buffer(1)]],
                               device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      16, 32, 16, TL, TR, true, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
  auto a = op.template get_left_input_cooperative_tensor<half, half, float>();
  auto b = op.template get_right_input_cooperative_tensor<half, half, float>();
  auto c = op.template get_destination_cooperative_tensor<metal::remove_addrspace_t<decltype(a)>,
                                                          metal::remove_addrspace_t<decltype(b)>, float>();
  constexpr int b_cols = TR ? 16 : 32;  // row length of stored B
  if (GUESS) {
    const short qid = lane >> 2;
    const short fm = (qid & 4) | ((lane >> 1) & 3), fn = ((qid & 2) | (lane & 1)) * 4;
    for (short j = 0; j < 8; j++) {
      const short r = fm + (j >> 2) * 8, col = fn + (j & 3);
      a[j] = A[r * 16 + col];
      // Stored B has two fragments: side by side (32 columns), or one above
      // the other (32 rows) when TR.
      b[j] = B[r * b_cols + col];
      b[8 + j] = TR ? B[(16 + r) * b_cols + col] : B[r * b_cols + 16 + col];
    }
  } else {
    for (ushort i = 0; i < a.get_capacity(); ++i)
      if (a.is_valid_element(i)) {
        auto at = a.get_multidimensional_index(i);
        a[i] = A[at[1] * 16 + at[0]];
      }
    for (ushort i = 0; i < b.get_capacity(); ++i)
      if (b.is_valid_element(i)) {
        auto at = b.get_multidimensional_index(i);
        b[i] = B[at[1] * b_cols + at[0]];
      }
  }
  for (ushort i = 0; i < c.get_capacity(); ++i)
    if (c.is_valid_element(i)) c[i] = 0.0f;
  op.run(a, b, c);
  c.store(tensor<device float, dextents<int, 2>, tensor_inline>(C, dextents<int, 2>(32, 16)));
}

#define instantiate_cooperative_inputs(name, tl, tr, guess) \
  template [[host_name(name)]] [[kernel]] decltype(cooperative_inputs<tl, tr, guess>) cooperative_inputs<tl, tr, guess>;
instantiate_cooperative_inputs("inputs_nn", false, false, false)
instantiate_cooperative_inputs("inputs_nt", false, true, false)
instantiate_cooperative_inputs("inputs_tn", true, false, false)
instantiate_cooperative_inputs("inputs_tt", true, true, false)
instantiate_cooperative_inputs("guessed_nt", false, true, true)
instantiate_cooperative_inputs("guessed_tn", true, false, true)

// Fragments declared through an alias template over vec and deduced through
// it (MLX's steel/attn/nax.h: `template <typename U> using dtype_frag_t =
// typename metal::vec<U, kElemsPerFrag>;`, `load(thread dtype_frag_t<T>&
// dst, ...)`), for bfloat and bool elements as well as half and float.
struct Frag8 {
  static constant constexpr const short kElems = 8;
  template <typename U>
  using dtype_frag_t = typename metal::vec<U, kElems>;

  // T deduced from the fragment, the source's type separately.
  template <typename T, typename SrcPtrType>
  METAL_FUNC static constexpr void load(thread dtype_frag_t<T>& dst, SrcPtrType src) {
    for (short i = 0; i < kElems; i++) dst[i] = static_cast<T>(src[i]);
  }
  // Two fragments of one type (one a local, one reached through a reference)
  // and one of another: C += A * B element by element, in CType.
  template <typename CType, typename AType>
  METAL_FUNC static constexpr void fma(thread dtype_frag_t<CType>& c0, thread dtype_frag_t<CType>& c1,
                                       const thread dtype_frag_t<AType>& a) {
    for (short i = 0; i < kElems; i++) {
      c0[i] += static_cast<CType>(a[i]) * c1[i];
      c1[i] = CType(i);
    }
  }
  // An explicit leading template argument, the deduced one after it.
  template <typename Op, typename T>
  METAL_FUNC static constexpr float reduce(thread const dtype_frag_t<T>& v) {
    float r = Op::init;
    for (short i = 0; i < kElems; i++) r = Op::apply(r, float(v[i]));
    return r;
  }
};
struct SumOp {
  static constant constexpr const float init = 0.0f;
  static METAL_FUNC float apply(float a, float b) { return a + b; }
};

template <typename T>
struct Tile8 {
  typedef typename Frag8::template dtype_frag_t<T> frag_type;
  frag_type frags[2];
  METAL_FUNC Tile8() thread {
    for (short i = 0; i < 2; i++) frags[i] = frag_type(0);
  }
  METAL_FUNC thread frag_type& frag_at(short i) thread { return frags[i]; }
};

// out[0..7]: 1 + T(src[i]) * i through float fragments (c1 = i) and a T
// fragment; out[16..23]: T(src[i]) where a bool fragment of the mask is
// true, else -1; out[24], out[26]: sums of the T and the bool fragment.
template <typename T>
METAL_FUNC void alias_fragments(const device T* src, const device bool* mask, device float* out) {
  Tile8<float> acc;
  typename Frag8::template dtype_frag_t<T> a;
  Frag8::load(a, src);
  Frag8::load(acc.frag_at(0), src);
  for (short i = 0; i < 8; i++) {
    acc.frag_at(0)[i] = 1.0f;
    acc.frag_at(1)[i] = float(i);
  }
  Frag8::fma(acc.frag_at(0), acc.frag_at(1), a);
  typename Tile8<bool>::frag_type m;
  Frag8::load(m, mask);
  for (short i = 0; i < 8; i++) {
    out[i] = acc.frag_at(0)[i];
    out[16 + i] = m[i] ? float(a[i]) : -1.0f;
  }
  out[24] = Frag8::reduce<SumOp>(a);
  out[26] = Frag8::reduce<SumOp>(m);
}

kernel void alias_fragments_bf16(const device bfloat* src [[buffer(0)]], const device bool* mask [[buffer(1)]],
                                 device float* out [[buffer(2)]]) {
  alias_fragments(src, mask, out);
}
kernel void alias_fragments_half(const device half* src [[buffer(0)]], const device bool* mask [[buffer(1)]],
                                 device float* out [[buffer(2)]]) {
  alias_fragments(src, mask, out);
}
