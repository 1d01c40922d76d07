// Metal stand-in: MetalPerformancePrimitives' TensorOps (matmul2d and the
// reductions; mfagen_standin/tensor_ops_matmul2d.h). convolution2d is not
// provided.
#pragma once
#include "../metal_tensor"
#include "../metal_cooperative_tensor"
#include "../mfagen_standin/tensor_ops_matmul2d.h"
