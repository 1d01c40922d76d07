// map_iterator and is_iterator_compatible (tests/cpu/tensor_ops_test.cpp):
// S = A B (16 x 24 from half 16 x 32 by 32 x 24) minus each row's maximum,
// through registers when the layouts are compatible and through threadgroup
// memory otherwise (the documented fallback); CHECKED 0 skips the check.
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

#ifndef CHECKED
#define CHECKED 1
#endif

kernel void minus_row_max(device half* a [[buffer(0)]], device half* b [[buffer(1)]], device float* c [[buffer(2)]],
                          device uint* path [[buffer(3)]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float row_max[16];
  constexpr auto desc = matmul2d_descriptor(16, 24, 32, false, false, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroup> op;
  auto ta = tensor<device half, dextents<int32_t, 2>, tensor_inline>(a, dextents<int32_t, 2>(32, 16));
  auto tb = tensor<device half, dextents<int32_t, 2>, tensor_inline>(b, dextents<int32_t, 2>(24, 32));
  auto tc = tensor<device float, dextents<int32_t, 2>, tensor_inline>(c, dextents<int32_t, 2>(24, 16));
  auto s = op.get_destination_cooperative_tensor<decltype(ta), decltype(tb), float>();
  for (ushort i = 0; i < s.get_capacity(); ++i)
    if (s.is_valid_element(i)) s[i] = 0.0f;
  op.run(ta, tb, s);
  auto m = op.get_row_reduction_destination_cooperative_tensor<decltype(ta), decltype(tb), float>();
  reduce_rows(s, m, reduction_operation::max, reduction_operation_identity<float>::max_identity);
  const bool in_registers = !CHECKED || is_iterator_compatible(s, m);
  if (in_registers) {
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it.is_valid_element()) *it -= *m.map_iterator(it);  // MARK: map_iterator
  } else {
    m.store(tensor<threadgroup float, dextents<int32_t, 1>, tensor_inline>(row_max, dextents<int32_t, 1>(16)));
    simdgroup_barrier(mem_flags::mem_threadgroup);
    for (ushort i = 0; i < s.get_capacity(); ++i)
      if (s.is_valid_element(i)) s[i] -= row_max[s.get_multidimensional_index(i)[1]];
  }
  s.store(tc);
  if (lane == 0) path[0] = in_registers ? 1u : 0u;
}
