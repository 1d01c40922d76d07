// Which kernels use Metal 4 TensorOps (DESIGN.md section 15) and what a
// kernel therefore needs of the device, as manifest.json's "requires" records
// it and the runtime's selection checks it (docs/runtime.md, "Device
// capabilities").
#pragma once

#include <string_view>

#include "plan/kernel_plan.h"
#include "spec/kernel_spec.h"

namespace mfagen::plan {

// True iff the kernel computes its products with mpp::tensor_ops::matmul2d
// (MetalPerformancePrimitives, Metal 4): forward kernels of target apple10.
// Decode and backward kernels of every target, and forward kernels of the
// other targets, use simdgroup_matrix.
bool uses_tensor_ops(const spec::KernelSpec& spec);

// What a planned kernel needs of the device (from plan.tensor_ops): the Metal
// Shading Language version it is compiled with, the lowest Apple GPU family
// it is for, and TensorOps.
struct DeviceRequirements {
  std::string_view metal;       // "3.1" (simdgroup_matrix kernels: bfloat needs 3.1) or "4.0" (TensorOps)
  std::string_view gpu_family;  // "apple7" (simdgroup_matrix: M1 and later) or "apple10" (TensorOps kernels: M5)
  bool tensor_ops = false;
};
DeviceRequirements device_requirements(const KernelPlan& plan);

}  // namespace mfagen::plan
