// The checker's TensorOps rules (Metal 4 tensor operations, DESIGN.md
// section 15): misuse of mpp::tensor_ops::matmul2d and cooperative tensors
// that the source shows. The API's own static rules (element types, scopes
// of cooperative inputs, transposes, a dynamic k) are the stand-in's
// static_asserts, reported as compile errors with Apple's messages; what is
// undefined only at run time (a scope not entered by every thread, a
// cooperative-tensor element read before it is written) is the cpu
// backend's detectors' job.
//
//   cooperative-tensor-space: a cooperative tensor, or an object holding one,
//     declared in device, constant or threadgroup memory, or a pointer or
//     reference to one there. Cooperative tensors are thread-private (each
//     thread of the scope holds its part of the elements): Metal declares
//     their members for `thread` objects only, the stand-in's take any.
//   tensor-op-scope: an execution_simdgroups<N> scope of more SIMD groups
//     than a threadgroup has (N > 32), or than the kernel's
//     [[max_total_threads_per_threadgroup(T)]] allows (32 N > T). The
//     manifest cross-check compares N with the dispatched threads.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>

#include <vector>

#include "check/check.h"
#include "check/matchers.h"
#include "check/signatures.h"

namespace mfagen::check {

void find_tensor_op_misuse(clang::ASTContext& context, const std::vector<clang::Decl*>& top_level,
                           std::vector<Finding>& findings);

// The execution_simdgroups<N> scopes (N > 1) of the matmul2d operations a
// kernel uses, in its body or in functions of the checked file it calls,
// directly or not: each distinct N once, at its first use.
std::vector<TensorOpScope> tensor_op_scopes(const clang::FunctionDecl& kernel, const LineOf& line_of);

}  // namespace mfagen::check
