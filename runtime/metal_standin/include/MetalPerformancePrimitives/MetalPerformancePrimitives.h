// Metal stand-in: MetalPerformancePrimitives' TensorOps (matmul2d and the
// reductions; mfagen_standin/tensor_ops_matmul2d.h). convolution2d is not
// provided.
#pragma once
#include "../metal_tensor"
#include "../metal_cooperative_tensor"
#include "../mfagen_standin/tensor_ops_matmul2d.h"

// __tensor_ops_detail::__remove_addrspace_t<decltype(t)>: an internal name of
// Apple's MetalPerformancePrimitives header that kernels written against it
// use to name a tensor's type for get_destination_cooperative_tensor<A, B, T>
// (mtlflashattn's v2_dtype kernel; observed in code that Apple's compiler
// accepts, the header itself is not public text). The type without its
// address space, as metal::remove_addrspace_t.
namespace __tensor_ops_detail {
template <class T>
using __remove_addrspace_t = metal::remove_addrspace_t<T>;
}  // namespace __tensor_ops_detail
