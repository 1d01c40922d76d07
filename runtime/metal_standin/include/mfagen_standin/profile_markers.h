// Metal stand-in: op markers for `mfagen profile` (docs/profile.md).
//
// A built-in that is one GPU operation but many instructions here (the
// simdgroup_matrix functions, simd collectives, barriers, float -> bfloat)
// starts with __MF_OP(op, amount). In a profiling compile (__MF_PROFILE
// defined) it becomes `__builtin_annotation(op | amount << 8, "mfagen.op")`:
// the counting pass reads the op there and counts none of the instructions
// inlined from that built-in's body. Elsewhere it is nothing.
//
// The numbers are the indices of mfagen::cpu::profile::Op
// (runtime/backends/cpu/include/mfagen/cpu/profile_ops.h), which this
// header cannot include (no C++ standard library in kernels);
// tests/cpu/profile_counts_test.cpp checks that the two lists agree.
#pragma once

enum __mf_profile_op : unsigned int {
  __mf_op_mma_f16_f32 = 0,
  __mf_op_mma_f16_f16 = 1,
  __mf_op_mma_bf16_f32 = 2,
  __mf_op_mma_bf16_bf16 = 3,
  __mf_op_mma_f32_f32 = 4,
  __mf_op_sgm_load_device = 5,
  __mf_op_sgm_load_threadgroup = 6,
  __mf_op_sgm_store_device = 7,
  __mf_op_sgm_store_threadgroup = 8,
  __mf_op_sgm_load_device_bytes = 9,
  __mf_op_sgm_load_threadgroup_bytes = 10,
  __mf_op_sgm_store_device_bytes = 11,
  __mf_op_sgm_store_threadgroup_bytes = 12,
  __mf_op_f32_add = 13,
  __mf_op_f32_minmax = 17,
  __mf_op_int_add = 35,
  __mf_op_convert = 41,
  __mf_op_device_load = 43,
  __mf_op_device_store = 44,
  __mf_op_threadgroup_load = 45,
  __mf_op_threadgroup_store = 46,
  __mf_op_threadgroup_barrier = 49,
  __mf_op_simdgroup_barrier = 50,
  __mf_op_simd_shuffle = 51,
  __mf_op_simd_reduce = 52,
  __mf_op_tensor_mma_f16 = 55,
  __mf_op_tensor_mma_f32 = 56,
  __mf_op_tensor_mma_i8 = 57,
  __mf_op_widen_bf16 = 58,
  // Not an op: an emulation frame (profile_ops.h, kEmulationFrameOp), a
  // built-in whose own instructions are not counted but whose callees'
  // markers are.
  __mf_op_emulation_frame = 255,
};

// In a profiling compile the simdgroup_matrix built-ins (__MF_OP_FUNC) are
// also kept out of line: on the GPU each is one instruction, so inlining
// their large bodies here would make the optimizer's unrolling decisions for
// the kernel around them unlike the GPU compiler's (loops around an MMA would
// stay rolled and recompute their index arithmetic). Collectives and barriers
// stay inline: the executor tells their call sites apart by return address.
// Built-ins that are out of line in every compile (their bodies are large
// and kernels call them from fully unrolled loops).
#define __MF_OP_OUT_OF_LINE inline __attribute__((noinline))
#ifdef __MF_PROFILE
#define __MF_OP_FUNC inline __attribute__((noinline))
#define __MF_OP(op, amount) \
  ((void)__builtin_annotation(static_cast<unsigned int>(op) | (static_cast<unsigned int>(amount) << 8), "mfagen.op"))
#else
#define __MF_OP_FUNC inline __attribute__((always_inline))
#define __MF_OP(op, amount) ((void)0)
#endif

// 32-bit registers a collective moves per lane: a float4 shuffle is four.
template <class T>
inline constexpr unsigned int __mf_words = (sizeof(T) + 3) / 4;
