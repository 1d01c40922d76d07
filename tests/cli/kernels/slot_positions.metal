// Which cooperative-tensor slot lands where: each thread of one simdgroup
// writes lane * 100 + slot into every valid slot of a 16 x 16 matmul2d
// destination and stores it to out (16 x 16, row-major). Under the default
// layout slot j of lane l is row fm + 8 * (j / 4), column fn + j % 4 (MLX
// NAX's fragment); `--tensor-layout-seed N` moves them.
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;

kernel void slot_positions(device float* out [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(16, 16, 16);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
  typedef tensor<device float, dextents<int, 2>, tensor_inline> matrix_t;
  auto ct = op.get_destination_cooperative_tensor<matrix_t, matrix_t, float>();
  for (ushort i = 0; i < ct.get_capacity(); ++i)
    if (ct.is_valid_element(i)) ct[i] = float(lane * 100 + i);
  ct.store(matrix_t(out, dextents<int, 2>(16, 16)));
}
