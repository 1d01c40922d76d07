// The Metal-subset rules the checker enforces (DESIGN.md section 6): things
// Metal rejects that clang's C++ for OpenCL (our host dialect) may accept.
// Each diagnostic carries one of these names. Recursion is not one: Apple
// documents recursive functions in compute passes (MTLComputePipelineDescriptor
// maxCallStackDepth, macOS 11: "Change its value if you use recursive
// functions in your compute pass"), MLX ships one (utils.h,
// LoopedElemToLoc::next), and the cpu backend runs it.
#pragma once

#include <string_view>

namespace mfagen::check::rules {

inline constexpr std::string_view kVirtualFunction = "virtual-function";
inline constexpr std::string_view kExceptions = "exceptions";                   // throw, try
inline constexpr std::string_view kDynamicAllocation = "dynamic-allocation";   // new, delete, malloc & co
inline constexpr std::string_view kGoto = "goto";
inline constexpr std::string_view kStdLibrary = "std-library";                 // std:: names
inline constexpr std::string_view kInclude = "include";  // headers other than <metal_*> and MetalPerformancePrimitives
inline constexpr std::string_view kThreadPointerEscape = "thread-pointer-escape";  // thread pointer stored to device memory
inline constexpr std::string_view kGenericPointer = "generic-pointer";         // `float* p = device_ptr;`
inline constexpr std::string_view kKernelParameterAttribute = "kernel-parameter-attribute";
inline constexpr std::string_view kDuplicateBindingIndex = "duplicate-binding-index";
inline constexpr std::string_view kKernelReturnType = "kernel-return-type";    // kernels return void
inline constexpr std::string_view kDouble = "double";
inline constexpr std::string_view kStaticLocal = "static-local";
// TensorOps (tensor_rules.h): a cooperative tensor outside thread memory; an
// execution_simdgroups<N> scope larger than the threadgroup can be.
inline constexpr std::string_view kCooperativeTensorSpace = "cooperative-tensor-space";
inline constexpr std::string_view kTensorOpScope = "tensor-op-scope";
// Not Metal rules: clang's own errors, valid Metal the cpu backend (where
// kernels are tested) cannot lower (`-(float4)x`), and manifest cross-check
// mismatches.
inline constexpr std::string_view kCompileError = "compile-error";
inline constexpr std::string_view kCpuLowering = "cpu-lowering";
inline constexpr std::string_view kManifest = "manifest";

}  // namespace mfagen::check::rules
