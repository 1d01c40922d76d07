// Kernels for ProfileCounts.TensorOps*: one 16x32x16 matmul2d run `rounds`
// times, with cooperative operands filled element by element (as MLX's
// NAXFrag::mma does) or with threadgroup tensors (as mfagen's kernels do).
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

constant constexpr auto kDesc =
    matmul2d_descriptor(16, 32, 16, false, true, false, matmul2d_descriptor::mode::multiply_accumulate);

// c (16 x 32, row-major) = rounds * a (16 x 16) b^T, b stored 32 x 16.
kernel void coop_operands(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                          device float* c [[buffer(2)]], constant uint& rounds [[buffer(3)]]) {
  matmul2d<kDesc, execution_simdgroup> op;
  auto left = op.get_left_input_cooperative_tensor<half, half, float>();
  auto right = op.get_right_input_cooperative_tensor<half, half, float>();
  auto out = op.get_destination_cooperative_tensor<decltype(left), decltype(right), float>();
  typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> Input;
  left.load(Input((device half*)a, dextents<int32_t, 2>(16, 16)));
  right.load(Input((device half*)b, dextents<int32_t, 2>(16, 32)));
  for (ushort i = 0; i < out.get_capacity(); ++i)
    if (out.is_valid_element(i)) out[i] = 0.0f;
  for (uint r = 0; r < rounds; ++r) op.run(left, right, out);
  out.store(tensor<device float, dextents<int32_t, 2>, tensor_inline>(c, dextents<int32_t, 2>(32, 16)));
}

kernel void tensor_operands(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                            device float* c [[buffer(2)]], constant uint& rounds [[buffer(3)]],
                            uint lane [[thread_index_in_simdgroup]]) {
  threadgroup half a_tile[16 * 16];
  threadgroup half b_tile[32 * 16];
  for (uint i = lane; i < 16 * 16; i += 32) a_tile[i] = a[i];
  for (uint i = lane; i < 32 * 16; i += 32) b_tile[i] = b[i];
  simdgroup_barrier(mem_flags::mem_threadgroup);
  typedef tensor<threadgroup half, dextents<int32_t, 2>, tensor_inline> Tile;
  Tile left(a_tile, dextents<int32_t, 2>(16, 16)), right(b_tile, dextents<int32_t, 2>(16, 32));
  matmul2d<kDesc, execution_simdgroup> op;
  auto out = op.get_destination_cooperative_tensor<Tile, Tile, float>();
  for (ushort i = 0; i < out.get_capacity(); ++i)
    if (out.is_valid_element(i)) out[i] = 0.0f;
  for (uint r = 0; r < rounds; ++r) op.run(left, right, out);
  out.store(tensor<device float, dextents<int32_t, 2>, tensor_inline>(c, dextents<int32_t, 2>(32, 16)));
}

// A float32 left operand (MLX's P in P V) times half, with relaxed_precision
// off and on: the product is float32 either way; the profile counts the
// relaxed one as 16-bit blocks (docs/cost_model.md, matmul2d).
template <bool kRelaxed>
void float_left(device const float* a, device const half* b, device float* c, uint rounds) {
  constexpr auto desc =
      matmul2d_descriptor(16, 32, 16, false, true, kRelaxed, matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroup> op;
  auto left = op.template get_left_input_cooperative_tensor<float, half, float>();
  auto right = op.template get_right_input_cooperative_tensor<float, half, float>();
  auto out = op.template get_destination_cooperative_tensor<decltype(left), decltype(right), float>();
  left.load(tensor<device float, dextents<int32_t, 2>, tensor_inline>((device float*)a, dextents<int32_t, 2>(16, 16)));
  right.load(tensor<device half, dextents<int32_t, 2>, tensor_inline>((device half*)b, dextents<int32_t, 2>(16, 32)));
  for (ushort i = 0; i < out.get_capacity(); ++i)
    if (out.is_valid_element(i)) out[i] = 0.0f;
  for (uint r = 0; r < rounds; ++r) op.run(left, right, out);
  out.store(tensor<device float, dextents<int32_t, 2>, tensor_inline>(c, dextents<int32_t, 2>(32, 16)));
}

kernel void float_left_strict(device const float* a [[buffer(0)]], device const half* b [[buffer(1)]],
                              device float* c [[buffer(2)]], constant uint& rounds [[buffer(3)]]) {
  float_left<false>(a, b, c, rounds);
}

kernel void float_left_relaxed(device const float* a [[buffer(0)]], device const half* b [[buffer(1)]],
                               device float* c [[buffer(2)]], constant uint& rounds [[buffer(3)]]) {
  float_left<true>(a, b, c, rounds);
}

// bfloat operands: the stand-in's product widens each element (a marked
// bfloat widening); inside the run that is the emulation's, not the kernel's.
kernel void bfloat_operands(device const bfloat* a [[buffer(0)]], device const bfloat* b [[buffer(1)]],
                            device float* c [[buffer(2)]], constant uint& rounds [[buffer(3)]]) {
  matmul2d<kDesc, execution_simdgroup> op;
  auto left = op.get_left_input_cooperative_tensor<bfloat, bfloat, float>();
  auto right = op.get_right_input_cooperative_tensor<bfloat, bfloat, float>();
  auto out = op.get_destination_cooperative_tensor<decltype(left), decltype(right), float>();
  typedef tensor<device bfloat, dextents<int32_t, 2>, tensor_inline> Input;
  left.load(Input((device bfloat*)a, dextents<int32_t, 2>(16, 16)));
  right.load(Input((device bfloat*)b, dextents<int32_t, 2>(16, 32)));
  for (ushort i = 0; i < out.get_capacity(); ++i)
    if (out.is_valid_element(i)) out[i] = 0.0f;
  for (uint r = 0; r < rounds; ++r) op.run(left, right, out);
  out.store(tensor<device float, dextents<int32_t, 2>, tensor_inline>(c, dextents<int32_t, 2>(32, 16)));
}

// tensor_operands with k left dynamic (mtlflashattn's v2 writes its
// descriptors so): the run reads the tiles where it uses them; the traffic
// counters must still see each tile once per run.
constant constexpr auto kDynamicK = matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent), false, true,
                                                        false, matmul2d_descriptor::mode::multiply_accumulate);
kernel void tensor_operands_dynamic_k(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                                      device float* c [[buffer(2)]], constant uint& rounds [[buffer(3)]],
                                      uint lane [[thread_index_in_simdgroup]]) {
  threadgroup half a_tile[16 * 16];
  threadgroup half b_tile[32 * 16];
  for (uint i = lane; i < 16 * 16; i += 32) a_tile[i] = a[i];
  for (uint i = lane; i < 32 * 16; i += 32) b_tile[i] = b[i];
  simdgroup_barrier(mem_flags::mem_threadgroup);
  typedef tensor<threadgroup half, dextents<int32_t, 2>, tensor_inline> Tile;
  Tile left(a_tile, dextents<int32_t, 2>(16, 16)), right(b_tile, dextents<int32_t, 2>(16, 32));
  matmul2d<kDynamicK, execution_simdgroup> op;
  auto out = op.get_destination_cooperative_tensor<Tile, Tile, float>();
  for (ushort i = 0; i < out.get_capacity(); ++i)
    if (out.is_valid_element(i)) out[i] = 0.0f;
  for (uint r = 0; r < rounds; ++r) op.run(left, right, out);
  out.store(tensor<device float, dextents<int32_t, 2>, tensor_inline>(c, dextents<int32_t, 2>(32, 16)));
}
