// Metal stand-in: feature macros Apple's compiler predefines for Apple GPUs,
// so code tests them before any include. Force-included (abi.h in the cpu
// backend's compile, the checker's prelude), as the compiler defines them.
// * __HAVE_SIMDGROUP_MATRIX__: simdgroup_matrix (MSL 2.3 and later on macOS).
//   metal-flash-attention's metal_simdgroup_matrix_storage defines its
//   fragment type only under it, and its kernels ran on Apple GPUs.
// * __HAVE_SIMDGROUP_FUTURE__: <metal_simdgroup_future>, the simdgroup
//   asynchronous copies (simdgroup_async_copy.h). metal-flash-attention v1
//   (e69ba95, Xcode 14.2) copies every tile only under it, and its published
//   attention and GEMM results were measured with those copies.
#pragma once
#define __HAVE_SIMDGROUP_MATRIX__ 1
#define __HAVE_SIMDGROUP_FUTURE__ 1
