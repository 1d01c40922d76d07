// Constructs of ggml's ggml-metal.metal and MLX's steel headers at their
// 2026-08 heads (issue 35), written for mfagen's tests (none of their code):
// each kernel computes something the test checks exactly.
#include <metal_stdlib>
using namespace metal;

#define MIN(x, y) ((x) < (y) ? (x) : (y))

// MLX's integral constant (steel/utils/integral_constant.h): a class that
// converts to its value, in a namespace of its own as MLX's.
namespace steel {
template <typename T, T v>
struct integral_constant {
  static constexpr constant T value = v;
  METAL_FUNC constexpr operator T() const thread noexcept { return value; }
};
template <int v>
using Int = integral_constant<int, v>;
}  // namespace steel
using steel::Int;

// Unsuffixed floating literals are float in Metal.
// out[0]: 0.5*x with a float4 x; out[1]: fmin(1, y/6 + 0.5), which is
// ambiguous between fmin(float, float) and fmin(half, half) if 0.5 is a
// double; out[2]: float4 v(0.0); out[3]: y + 16777217.0 - 16777216.0f, which
// is 0 in float (16777217 is not a float: it rounds to 16777216) and 1 in
// double; out[4]: y * 0.1, the float nearest 0.1 times y, rounded once.
kernel void float_literals(device const float* in [[buffer(0)]], device float* out [[buffer(1)]]) {
  float4 x = float4(in[0], in[1], in[2], in[3]);
  float4 h = 0.5*x;
  out[0] = h.x + h.y + h.z + h.w;
  float y = in[4];
  out[1] = fmin(1, y/6 + 0.5);
  float4 v(0.0);
  out[2] = v.x + v.w;
  out[3] = in[5] + 16777217.0 - 16777216.0f;
  out[4] = in[6] * 0.1;
}

// ggml's q8_0 dequantizer reads signed bytes four at a time through
// `device const packed_char4*` at any 2-byte offset and converts them with
// float4(...). out[i] = float of the byte, for 8 bytes starting at byte 2.
kernel void packed_char4_reads(device const char* bytes [[buffer(0)]], device float* out [[buffer(1)]]) {
  device const packed_char4* q = (device const packed_char4*)(bytes + 2);
  for (int i = 0; i < 2; ++i) {
    float4 f = float4(q[i]);
    out[4*i + 0] = f.x;
    out[4*i + 1] = f.y;
    out[4*i + 2] = f.z;
    out[4*i + 3] = f[3];
  }
  packed_uchar4 u = packed_uchar4(uchar4(1, 2, 3, 250));
  packed_short2 s = packed_short2(short2(-7, 9));
  out[8] = float(u.w) + float(s.x) + float(s[1]);
}

// ggml: `#pragma unroll (MIN(DK8/2, 4*NSG))` with MIN a macro of the file
// (the argument of the pragma is a constant expression after expansion).
template <short N>
METAL_FUNC float sum_first(device const float* a) {
  float s = 0.0f;
#pragma unroll (MIN(N/2, 4*2))
  for (short i = 0; i < N; ++i) s += a[i];
  return s;
}
kernel void unroll_with_macro(device const float* a [[buffer(0)]], device float* out [[buffer(1)]]) {
  out[0] = sum_first<6>(a);
}

// MLX's steel/attn/mma.h: `src += str_y` with str_y an Int<1>, a pointer
// in a template parameter; also `-=` and a pointer in threadgroup memory.
template <typename Ptr, typename StrX, typename StrY>
METAL_FUNC float walk(Ptr src, StrX str_x, StrY str_y) {
  float s = 0.0f;
  for (short j = 0; j < 3; ++j) {
    s += src[0];
    src += str_y;
  }
  src -= 3 * str_y;
  src += str_x;
  return s + 100.0f * src[0];
}
kernel void pointer_plus_integral_constant(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
                                           uint lane [[thread_index_in_threadgroup]]) {
  threadgroup float t[8];
  t[lane] = a[lane] * 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lane == 0) {
    out[0] = walk(a, Int<4>{}, Int<1>{});
    threadgroup const float* p = t;
    p += Int<2>{};
    out[1] = walk(p, Int<4>{}, Int<1>{});
  }
}

// MLX's loaders zero the lanes they do not load with
// `tmp_val[j] = tmp_idx[j] ? tmp_val[j] : T(0);`; with T its complex64_t,
// whose templated conversions and address-space constructors make clang find
// the conditional between a thread lvalue and a prvalue ambiguous (Metal
// gives a prvalue). Lane i keeps element i of two.
template <typename T>
struct Complex {
  T re, im;
  Complex() thread = default;
  constexpr Complex(T r, T i) thread : re(r), im(i) {}
  template <typename U, typename = typename enable_if<is_convertible_v<U, T>>::type>
  constexpr Complex(U x) thread : re(static_cast<T>(x)), im(T(0)) {}
  template <typename U, typename = typename enable_if<is_convertible_v<U, T>>::type>
  constexpr Complex(U x) device : re(static_cast<T>(x)), im(T(0)) {}
  constexpr Complex(vec<T, 2> v) thread : re(v.x), im(v.y) {}
  constexpr Complex(vec<T, 2> v) device : re(v.x), im(v.y) {}
  constexpr operator vec<T, 2>() const thread { return vec<T, 2>(re, im); }
  constexpr operator vec<T, 2>() const device { return vec<T, 2>(re, im); }
  template <typename U, typename = typename enable_if<is_convertible_v<T, U>>::type>
  constexpr operator U() const thread { return static_cast<U>(re); }
  template <typename U, typename = typename enable_if<is_convertible_v<T, U>>::type>
  constexpr operator U() const device { return static_cast<U>(re); }
};
template <typename T>
METAL_FUNC void keep_own(device const T* src, device T* dst, uint lane) {
  T tmp[2];
  bool keep[2] = {lane == 0, lane == 1};
  for (int j = 0; j < 2; ++j) tmp[j] = src[j];
  for (int j = 0; j < 2; ++j) tmp[j] = keep[j] ? tmp[j] : T(0);
  dst[2 * lane] = tmp[0];
  dst[2 * lane + 1] = tmp[1];
}
kernel void conditional_of_a_many_way_class(device const Complex<float>* x [[buffer(0)]],
                                            device Complex<float>* out [[buffer(1)]],
                                            uint lane [[thread_position_in_grid]]) {
  keep_own(x, out, lane);
}

// MLX's rope.metal: a program-scope `forward` read unqualified under `using
// namespace metal;` (Metal's library has no metal::forward).
constant float forward = 3.0f;

// MLX's elem_to_loc_2_nd<IdxT>({N * index.x, index.y, index.z}, ...): a
// braced list for a vector parameter of a function template.
template <typename IdxT>
METAL_FUNC IdxT linear_index(uint3 elem, constant const int64_t* strides) {
  return IdxT(elem.x) * IdxT(strides[1]) + IdxT(elem.y) * IdxT(strides[0]) + IdxT(elem.z);
}
METAL_FUNC float scaled(float2 xy) { return xy.x * 10.0f + xy.y; }

// MLX's rope and binary kernels: array parameters (`constant const int64_t
// strides[2]`, a pointer to the first element) and buffers without
// [[buffer(n)]], which take the lowest free indices in order (offset 2,
// strides 3, out_strides 4, pair 5). out[y * out_strides[0] + x *
// out_strides[1]] = in[offset + linear_index({2 * x, y, 0}, strides)] *
// forward + scaled({pair[0][1], pair[1][0]}).
template <typename T, int N>
[[kernel]] void array_parameters(
    const device T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    const device int* offset,
    constant const int64_t strides[2],
    constant const int64_t out_strides[2],
    constant const float pair[2][2],
    uint2 pos [[thread_position_in_grid]]) {
  int64_t i = offset[0] + linear_index<int64_t>({N * pos.x, pos.y, 0}, strides);
  out[pos.y * out_strides[0] + pos.x * out_strides[1]] =
      in[i] * static_cast<T>(forward) + static_cast<T>(scaled({pair[0][1], pair[1][0]}));
}
template [[host_name("array_parameters_float")]] [[kernel]] decltype(array_parameters<float, 2>)
    array_parameters<float, 2>;

// MLX's layer_norm: `threadgroup float local_buffer[32] = {0};`, zeroed
// again by simdgroup 0 and synchronized before any read. The initializer is
// accepted and not applied (msl_lowering.cpp): out[0] is the sum of x over
// the threadgroup, through one partial sum per simdgroup.
kernel void threadgroup_initializer_then_zeroed(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                               uint lid [[thread_position_in_threadgroup]],
                                               uint lane [[thread_index_in_simdgroup]],
                                               uint sg [[simdgroup_index_in_threadgroup]],
                                               uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32] = {0}, unused[2] = {1.0f, 2.0f};
  if (sg == 0) partial[lane] = 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float s = simd_sum(x[lid]);
  if (lane == 0) partial[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) {
    float total = 0.0f;
    for (uint i = 0; i < 32; ++i) total += partial[i];
    out[0] = total + float(nsg > 32 ? unused[0] : 0.0f);
  }
}

// A kernel that reads the initial value: an uninitialized-read finding,
// never a value the cpu backend chose for the initializer.
kernel void threadgroup_initializer_read(device float* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float seed[2] = {1.0f, 2.0f};
  if (lid == 0) out[0] = seed[1];  // MARK: reads the initializer
}

// MLX's quantized kernels: `uint quad_gid [[quadgroup_index_in_threadgroup]]`
// and `uint quad_lid [[thread_index_in_quadgroup]]`. Thread t writes
// 100 * quad_gid + 10 * quad_lid + (quad_sum of its quad's t) / 2.
kernel void quadgroup_indices(device uint* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]],
                              uint quad_gid [[quadgroup_index_in_threadgroup]],
                              ushort quad_lid [[thread_index_in_quadgroup]]) {
  out[t] = 100u * quad_gid + 10u * quad_lid + quad_sum(t) / 2u;
}

// MLX's arg_reduce and quantized kernels, U = bfloat: a constant bfloat
// copied into another constant (`static constexpr constant U init =
// Limits<U>::max;`) and converted to float (`float w_min = Limits<T>::max;`).
// out = {max, init, lowest} as floats.
template <typename U>
struct PeerLimits {
  static constexpr constant U max = metal::numeric_limits<U>::max();
  static constexpr constant U lowest = metal::numeric_limits<U>::lowest();
};
template <typename U>
struct PeerArgMin {
  static constexpr constant U init = PeerLimits<U>::max;
};
kernel void constant_bfloat_copies(device float* out [[buffer(0)]]) {
  float w_max = PeerLimits<bfloat>::max;
  bfloat init = PeerArgMin<bfloat>::init;
  out[0] = w_max;
  out[1] = float(init);
  out[2] = static_cast<float>(PeerLimits<bfloat>::lowest);
}

// MLX's gemv_masked.h, T = bfloat: `out_scale = T(mask_out);` with a mask
// class that converts to bool in every address space (its no-mask type),
// and an integer-valued class cast to bfloat. Metal's bfloat is a builtin
// scalar: the class's conversion function, then bool or int -> bfloat.
// out = {T(flag off), T(flag on), static_cast<bfloat>(count 3),
//        bfloat(count 16777217) (rounds once to 16777216), T(flag on) * 2}.
struct PeerFlag {
  bool on;
  constexpr METAL_FUNC operator bool() thread { return on; }
  constexpr METAL_FUNC operator bool() const threadgroup { return on; }
  constexpr METAL_FUNC operator bool() const device { return on; }
  constexpr METAL_FUNC operator bool() const constant { return on; }
};
struct PeerCount {
  int n;
  METAL_FUNC operator int() const thread { return n; }
};
template <typename T, typename mask_t>
METAL_FUNC T scale_of(mask_t mask) {
  T scale{2};
  scale = T(mask);
  return scale;
}
kernel void bfloat_from_converting_classes(device float* out [[buffer(0)]],
                                           const device PeerFlag* flags [[buffer(1)]]) {
  PeerFlag off = {false};
  out[0] = float(scale_of<bfloat>(off));
  out[1] = float(scale_of<bfloat>(flags[1]));
  PeerCount three = {3}, big = {16777217};
  out[2] = static_cast<float>(static_cast<bfloat>(three));
  out[3] = float(bfloat(big));
  out[4] = float(bfloat(flags[1]) * bfloat(2));
}

// MLX's conv.metal: explicit instantiations without a template argument
// list (T and N deduced from the declared parameter types), several of them
// on one line through a macro. out[i] = in[i] * N + the N sizes' sum.
template <int N>
struct PeerDims {
  int size[N];
};
template <typename T, int N>
[[kernel]] void deduced_dims(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                             const constant PeerDims<N>* dims [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  int sum = 0;
  for (short d = 0; d < N; d++) sum += dims->size[d];
  out[i] = in[i] * T(N) + T(sum);
}
#define instantiate_deduced_dims(name, itype, n)                                                     \
  template [[host_name("deduced_dims_" #name "_" #n)]] [[kernel]] void deduced_dims(                 \
      const device itype* in [[buffer(0)]], device itype* out [[buffer(1)]],                         \
      const constant PeerDims<n>* dims [[buffer(2)]], uint i [[thread_position_in_grid]]);
#define instantiate_deduced_dims_all(name, itype) \
  instantiate_deduced_dims(name, itype, 1) instantiate_deduced_dims(name, itype, 2) instantiate_deduced_dims(name, itype, 3)
instantiate_deduced_dims_all(float32, float);
instantiate_deduced_dims_all(int32, int);

// MLX's fft/readwrite.h: a class template partially specialized on
// vec<T, 2>, which Metal deduces for every builtin element type.
// out = {lanes of float2, sizeof scalar of half2, scalar of bool2 is bool,
//        scalar of int2 is int, lanes of float4 (primary), lanes of float}.
template <typename storage_T>
struct PeerScalarOf {
  using scalar_T = storage_T;
  static constexpr constant int lanes = 1;
};
template <typename T>
struct PeerScalarOf<vec<T, 2>> {
  using scalar_T = T;
  static constexpr constant int lanes = 2;
};
kernel void vec_partial_specialization(device int* out [[buffer(0)]]) {
  out[0] = PeerScalarOf<float2>::lanes;
  out[1] = int(sizeof(PeerScalarOf<half2>::scalar_T));
  out[2] = int(is_same_v<PeerScalarOf<bool2>::scalar_T, bool>);
  out[3] = int(is_same_v<PeerScalarOf<metal::vec<int, 2>>::scalar_T, int>);
  out[4] = PeerScalarOf<float4>::lanes;
  out[5] = PeerScalarOf<float>::lanes;
}

// MLX's fft/readwrite.h: `using complex_T = vec<scalar_T, 2>;` in a class
// template, then `complex_T(elem.x, -elem.y)`: an alias of a vector type is
// that vector type, so this is Metal's vector constructor (and
// `(complex_T)x` its cast). out = {conj of (1.5, 2.5), (3, 0),
// (half) conj of (0.25, -4), (complex_T)int2(7, -9), a typedef'd float4}.
template <typename T>
struct PeerConj {
  using scalar_T = T;
  using complex_T = vec<scalar_T, 2>;
  bool inv;
  complex_T post(complex_T e) const thread { return inv ? complex_T(e.x, -e.y) : e; }
  complex_T make(scalar_T a) const thread { return complex_T(a, 0); }
  complex_T cast(int2 i) const thread { return (complex_T)i; }
};
kernel void vector_alias_constructors(device float* out [[buffer(0)]]) {
  PeerConj<float> c{true};
  float2 a = c.post(float2(1.5f, 2.5f)), b = c.make(3.0f), d = c.cast(int2(7, -9));
  PeerConj<half> h{true};
  half2 e = h.post(half2(0.25h, -4.0h));
  typedef float4 peer_quad;
  peer_quad q = peer_quad(a, b);
  out[0] = a.x, out[1] = a.y, out[2] = b.x, out[3] = b.y;
  out[4] = float(e.x), out[5] = float(e.y), out[6] = d.x, out[7] = d.y;
  out[8] = q.x + q.y + q.z + q.w;
}

// MLX's fft.h: a non-type template parameter whose type is an alias
// template of a pointer to function, `template <typename T> using RadixFunc
// = void (*)(thread vec<T, 2>*, thread vec<T, 2>*);` and `template
// <typename T, int radix, RadixFunc<T> radix_func>`, given `radix2<T>`.
// out = (x + y, x - y) applied to (x, y) `steps` times.
template <typename T>
using PeerButterfly = void (*)(thread vec<T, 2>*, thread vec<T, 2>*);
template <typename T>
METAL_FUNC void peer_radix2(thread vec<T, 2>* x, thread vec<T, 2>* y) {
  y[0] = x[0] + x[1];
  y[1] = x[0] - x[1];
}
template <typename T, int steps, PeerButterfly<T> butterfly>
METAL_FUNC void peer_steps(thread vec<T, 2>* x) {
  vec<T, 2> y[2];
  for (int s = 0; s < steps; s++) {
    butterfly(x, y);
    x[0] = y[0], x[1] = y[1];
  }
}
kernel void function_pointer_alias_template_arguments(device float2* io [[buffer(0)]], device int2* iio [[buffer(1)]]) {
  float2 x[2] = {io[0], io[1]};
  peer_steps<float, 3, peer_radix2<float>>(x);
  io[0] = x[0], io[1] = x[1];
  int2 i[2] = {iio[0], iio[1]};
  peer_steps<int, 1, peer_radix2<int>>(i);
  iio[0] = i[0], iio[1] = i[1];
}

// Run-time function pointers (Metal 2.3 and later, MSL specification 4,
// section 1.5.4; section 2.16 passes `float (*fnptr[3])(float)` and calls
// through it): a pointer parameter, a reference parameter and a table
// indexed per thread, as CheckRules.RunTimeFunctionPointersAreValidMetal
// accepts them. out[i] = 2x + x^2 + (i even ? 2x : x^2), x = out[i].
float peer_twice(float x) { return 2.0f * x; }
float peer_square(float x) { return x * x; }
float peer_apply(float (*f)(float), float x) { return f(x); }
float peer_first(float (&f)(float), float x) { return f(x); }
float peer_pick(float (*fs[2])(float), uint i, float x) { return fs[i % 2](x); }
kernel void run_time_function_pointers(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float (*table[2])(float) = {peer_twice, peer_square};
  out[i] = peer_apply(peer_twice, out[i]) + peer_first(peer_square, out[i]) + peer_pick(table, i, out[i]);
}

// MLX's conv.metal: out-of-class definitions, without an initializer, of
// constexpr static data members in the constant address space (required by
// C++14 when the member is odr-used, redundant since C++17), also of a class
// template's member. out[i] = w[i / 3][i % 3] * n + k, the table indexed at
// run time (an odr-use).
struct PeerTable {
  static constant constexpr const float w[2][3] = {{1.5f, 2, 3}, {4, 5, -6}};
  static constant constexpr const int n = 7;
};
constant constexpr const float PeerTable::w[2][3];
constant constexpr const int PeerTable::n;
template <int N>
struct PeerTwice {
  static constant constexpr const int k = N * 2;
};
template <int N>
constexpr constant const int PeerTwice<N>::k;
kernel void constexpr_member_definitions(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = PeerTable::w[i / 3][i % 3] * PeerTable::n + PeerTwice<5>::k;
}

// MLX's conv.metal: `(G * g) * Gt` with simdgroup_matrix<float, 8, 8>
// operands. The MSL specification lists `operator*` among the SIMD-group
// matrix operations (a * b, as simdgroup_multiply computes it). out = {A * B,
// (A * B) * A, simdgroup_multiply(A, B)}, hout = H * H.
kernel void simdgroup_matrix_products(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                                      const device half* h [[buffer(2)]], device float* out [[buffer(3)]],
                                      device half* hout [[buffer(4)]]) {
  simdgroup_float8x8 A, B, D;
  simdgroup_load(A, a);
  simdgroup_load(B, b);
  simdgroup_float8x8 AB = A * B;
  simdgroup_float8x8 ABA = (A * B) * A;
  simdgroup_multiply(D, A, B);
  simdgroup_store(AB, out);
  simdgroup_store(ABA, out + 64);
  simdgroup_store(D, out + 128);
  simdgroup_half8x8 H;
  simdgroup_load(H, h);
  simdgroup_half8x8 HH = H * H;
  simdgroup_store(HH, hout);
}

// MLX's conv.metal (lines 444, 446): `g.thread_elements()[0] = c ?
// Ws[...][c] : T(0);` with a threadgroup T array and T = bfloat. Metal's
// arms are values (C++14 [expr.cond]: the lvalue converts to a prvalue of
// its type; the address space is where it is read from, MSL section 4), so
// the result is the element when c holds, else 0, read only when c holds.
template <typename T>
METAL_FUNC float peer_pick(threadgroup T* tg, bool c, int i) {
  return float(c ? tg[i] : T(0));
}
kernel void conditional_threadgroup_bfloat(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                           uint i [[thread_position_in_threadgroup]]) {
  threadgroup bfloat tg[4];
  threadgroup float tf[4];
  tg[i] = bfloat(in[i]);
  tf[i] = in[i] * 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = peer_pick<bfloat>(tg, i % 2 == 0, i) + peer_pick<float>(tf, i % 2 == 1, i);
}

// MLX's fft/radix.h (line 62): `x[0] - 0.5 * a_1` in radix3<T> with a
// vec<T, 2> a_1, T = half: the literal is a float (unsuffixed literals are
// float) and MSL section 2.13 converts the scalar to the vector's element
// type, so the product is a half2 and 0.7 is half(0.7f). out = {half's
// x0 - 0.7 * a, 0.5 * a - x0, then float's}.
template <typename T>
METAL_FUNC void peer_scaled_difference(thread vec<T, 2>* x, thread vec<T, 2>* y) {
  vec<T, 2> a = x[1] + x[2];
  y[0] = x[0] - 0.7 * a;
  y[1] = 0.5 * a - x[0];
}
kernel void scalar_literal_times_half_vector(device float* out [[buffer(0)]]) {
  half2 h[3] = {half2(1.0h, 2.0h), half2(0.5h, 0.25h), half2(0.5h, 0.75h)}, hy[2];
  peer_scaled_difference<half>(h, hy);
  float2 f[3] = {float2(1.0f, 2.0f), float2(0.5f, 0.25f), float2(0.5f, 0.75f)}, fy[2];
  peer_scaled_difference<float>(f, fy);
  out[0] = hy[0].x, out[1] = hy[0].y, out[2] = hy[1].x, out[3] = hy[1].y;
  out[4] = fy[0].x, out[5] = fy[0].y, out[6] = fy[1].x, out[7] = fy[1].y;
}

// MLX's steel_gemm_masked.h: two kernel templates of one name, told apart by
// their template parameters (block_masked_gemm<T, out_mask_t, op_mask_t, BM,
// ...> and block_masked_gemm<T, BM, ...>), each instantiated by name.
// out[0] = the overload's mark, out[1] = the scale it was given.
template <typename T, typename M, int Scale>
[[kernel]] void overloaded_kernel(device T* out [[buffer(0)]], const device M* mask [[buffer(1)]]) {
  out[0] = T(1);
  out[1] = T(Scale) * T(mask[0]);
}
template <typename T, int Scale, bool Twice = false>
[[kernel]] void overloaded_kernel(device T* out [[buffer(0)]], const constant int& unused [[buffer(2)]]) {
  out[0] = T(2);
  out[1] = T(Twice ? 2 * Scale : Scale);
}
template [[host_name("overloaded_typed_mask")]] [[kernel]] decltype(overloaded_kernel<float, half, 3>)
    overloaded_kernel<float, half, 3>;
template [[host_name("overloaded_values")]] [[kernel]] decltype(overloaded_kernel<float, 5>) overloaded_kernel<float, 5>;
template [[host_name("overloaded_values_twice")]] [[kernel]] decltype(overloaded_kernel<float, 5, true>)
    overloaded_kernel<float, 5, true>;

// MLX's steel_gemm_masked.h, T = bfloat: `lhs_mask_op.scale = lhs_mask[i];`,
// a bfloat member assigned from a `const device` mask element whose class
// converts to bool (its no-mask type), or from a bool mask. Metal's bfloat is
// a builtin scalar, so the assignment converts implicitly: the class's
// conversion function, then bool -> bfloat.
// out = {flag off, flag on, bool true, local flag on * 3}.
struct PeerScaleOp {
  bfloat scale;
};
kernel void bfloat_assigned_from_converting_classes(device float* out [[buffer(0)]],
                                                    const device PeerFlag* flags [[buffer(1)]],
                                                    const device bool* bools [[buffer(2)]]) {
  PeerScaleOp op = {bfloat(5)};
  op.scale = flags[0];
  out[0] = float(op.scale);
  op.scale = flags[1];
  out[1] = float(op.scale);
  op.scale = bfloat(5);
  op.scale = bools[1];
  out[2] = float(op.scale);
  PeerFlag local = {true};
  op.scale = local;
  out[3] = float(op.scale * bfloat(3));
}

// MLX's reduction/ops.h, scan.h and sort.h: `static constexpr constant U
// init = U(0);` in a class template. A constructor or C-style cast of a
// template type parameter is a constant expression (the lowering's
// __mf_dep_ctor / __mf_dep_cast for them are constexpr), here used where
// only one is allowed: another constexpr variable and an array bound.
// out = {13, 13, 4}.
template <typename U>
struct PeerReductionInit {
  static constexpr constant U init = U(3);
  static constexpr constant U cast_init = (U)7;
};
template <typename U>
U peer_init_twice_plus_cast() {
  constexpr U twice = PeerReductionInit<U>::init * U(2);
  return twice + PeerReductionInit<U>::cast_init;
}
kernel void constexpr_dependent_constructors(device float* out [[buffer(0)]]) {
  out[0] = float(peer_init_twice_plus_cast<int>());
  out[1] = peer_init_twice_plus_cast<float>();
  int bound[PeerReductionInit<int>::init + 1] = {};
  out[2] = float(sizeof(bound) / sizeof(bound[0]));
}

// MLX's `static constexpr constant U init = Limits<U>::max;` with U its
// complex64_t (reduction/ops.h, scan.h, sort.h): a class object copied out
// of a constexpr constant, into another and into thread memory, as Metal
// copies it from any space. out = {2.5, -1, -1, 2.5}.
struct PeerPair {
  float re, im;
  constexpr PeerPair(float r, float i) thread : re(r), im(i) {}
};
template <typename T>
struct PeerLimits;
template <>
struct PeerLimits<PeerPair> {
  static constexpr constant PeerPair max = PeerPair(2.5f, -1.0f);
};
template <typename U>
struct PeerMaxOp {
  static constexpr constant U init = PeerLimits<U>::max;
};
kernel void constexpr_class_constants(device float* out [[buffer(0)]]) {
  PeerPair copy = PeerMaxOp<PeerPair>::init;
  out[0] = copy.re;
  out[1] = copy.im;
  copy = PeerPair(PeerMaxOp<PeerPair>::init.im, PeerMaxOp<PeerPair>::init.re);
  out[2] = copy.re;
  out[3] = copy.im;
}

// MLX's reduce_row.h, And/Or reductions of bfloat input: `U vals[N]; vals[j]
// = row[j];` with U = bool and row a `const device bfloat*`. Metal's bfloat
// is a builtin scalar and converts to bool (nonzero is true), in an
// assignment, an initialization and a condition.
template <typename T, typename U>
METAL_FUNC void peer_truth_values(const device T* row, device uint* out) {
  U vals[3];
  for (int j = 0; j < 3; ++j) vals[j] = row[j];
  for (int j = 0; j < 3; ++j) out[j] = vals[j] ? 1u : 0u;
}
kernel void bfloat_truth_values(const device bfloat* row [[buffer(0)]], device uint* out [[buffer(1)]]) {
  peer_truth_values<bfloat, bool>(row, out);
  bool initialized = row[3];
  out[3] = initialized ? 1u : 0u;
  bfloat local = row[4];
  out[4] = local ? 1u : 0u;
  out[5] = bool(row[5]) && !local ? 1u : 0u;
}

// MLX's sort.h: a `thread ValT (&vals)[N]` parameter (a reference to a
// thread array, not ValT's constructor) whose elements go to a `thread T&`
// swap that declares a `T` local; and scan.h's `enable_if_t<sizeof(T) < 8,
// bool>`, a comparison inside a template argument list, picking the
// overload by the element's size. out = the four values sorted, then 4 and 8.
template <typename T>
METAL_FUNC void peer_swap(thread T& a, thread T& b) {
  T w = a;
  a = b;
  b = w;
}
template <typename ValT, short N>
struct PeerThreadSort {
  static METAL_FUNC void sort(thread ValT (&vals)[N]) {
    for (short i = 0; i < N; ++i)
      for (short j = i & 1; j < N - 1; j += 2)
        if (vals[j + 1] < vals[j]) peer_swap(vals[j + 1], vals[j]);
  }
};
template <typename T, metal::enable_if_t<sizeof(T) < 8, bool> = true>
uint peer_size_class(T) {
  return 4;
}
template <typename T, metal::enable_if_t<sizeof(T) == 8, bool> = true>
uint peer_size_class(T) {
  return 8;
}
kernel void thread_array_references(device const uint* in [[buffer(0)]], device uint* out [[buffer(1)]]) {
  uint vals[4] = {in[0], in[1], in[2], in[3]};
  PeerThreadSort<uint, 4>::sort(vals);
  for (int i = 0; i < 4; ++i) out[i] = vals[i];
  out[4] = peer_size_class(in[0]);
  out[5] = peer_size_class(ulong(in[0]));
}

// MLX's sort.h: `out[i] = tgp_vals[i]` with a uint output and a threadgroup
// bfloat, Metal's implicit conversion of the builtin scalar (the repair's
// __mf_implicit_scalar), in a template also instantiated for float, where
// it changes nothing. out = {3, 0, 2}, fout = {2.5}.
template <typename U, typename V>
METAL_FUNC void peer_write_out(device U* out, threadgroup V* vals, uint n) {
  for (uint i = 0; i < n; ++i) out[i] = vals[i];
}
kernel void bfloat_assigned_to_integers(const device bfloat* in [[buffer(0)]], device uint* out [[buffer(1)]],
                                        device float* fout [[buffer(2)]]) {
  threadgroup bfloat vals[3];
  threadgroup float fvals[1];
  for (int i = 0; i < 3; ++i) vals[i] = in[i];
  fvals[0] = 2.5f;
  peer_write_out(out, vals, 3);
  peer_write_out(fout, fvals, 1);
}
