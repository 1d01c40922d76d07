#include "profile/kernel_work.h"

namespace mfagen::profile {

double counted_flops(const LaunchWork& l) {
  const double mma = l.op(Op::mma_f16_f32) + l.op(Op::mma_f16_f16) + l.op(Op::mma_bf16_f32) +
                     l.op(Op::mma_bf16_bf16) + l.op(Op::mma_f32_f32) + l.op(Op::tensor_mma_f16) +
                     l.op(Op::tensor_mma_f32) + l.op(Op::tensor_mma_i8);
  return 1024 * mma + 2 * (l.op(Op::f32_fma) + l.op(Op::f16_fma)) + l.op(Op::f32_add) + l.op(Op::f32_mul) +
         l.op(Op::f16_add) + l.op(Op::f16_mul);
}

}  // namespace mfagen::profile
