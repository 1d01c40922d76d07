#include "plan/tensor_ops.h"

namespace mfagen::plan {

bool uses_tensor_ops(const spec::KernelSpec& s) {
  return s.target == spec::Target::apple10 && s.kind == spec::Kind::forward;
}

DeviceRequirements device_requirements(const KernelPlan& p) {
  // TensorOps kernels are meant for M5 GPUs (Apple10), whose GPU cores have
  // the neural accelerators TensorOps use; earlier families run TensorOps on
  // Metal 4 too but gain nothing (llama.cpp enables its TensorOps kernels by
  // default on M5 and later only, MLX its NAX kernels on GPU generation 17+).
  if (p.tensor_ops) return {"4.0", "apple10", true};
  // Every other kernel is what `mfagen_add_kernels` and the Metal backend
  // compile with -std=metal3.1 (bfloat), and simdgroup_matrix is Apple7+.
  return {"3.1", "apple7", false};
}

}  // namespace mfagen::plan
