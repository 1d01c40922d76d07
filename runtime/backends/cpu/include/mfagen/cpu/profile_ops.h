// What `mfagen profile` counts: the GPU operations a kernel issues, one entry
// per kind. Shared by the counting pass (instrument/ProfileCounters.cpp), the
// Metal stand-in's op markers (mfagen_standin/profile_markers.h, which spells
// the same numbers) and the executor. A count is per simdgroup issue: one
// instruction for all 32 lanes, times the number of vector elements it
// operates on (Apple GPUs are scalar per thread). Bump kAbiVersion in
// kernel_abi.h when this list changes.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace mfagen::cpu::profile {

// X(name, description). The order is the ABI: the stand-in's markers and the
// pass use the index.
#define MFAGEN_PROFILE_OPS(X)                                                                              \
  /* simdgroup_matrix 8x8x8 multiply-accumulates, by operand (A, B) and accumulator (C, D) element types */ \
  X(mma_f16_f32, "simdgroup 8x8x8 MMA, half operands, float accumulator")                                 \
  X(mma_f16_f16, "simdgroup 8x8x8 MMA, half operands, half accumulator")                                  \
  X(mma_bf16_f32, "simdgroup 8x8x8 MMA, bfloat operands, float accumulator")                              \
  X(mma_bf16_bf16, "simdgroup 8x8x8 MMA, bfloat operands, bfloat accumulator")                            \
  X(mma_f32_f32, "simdgroup 8x8x8 MMA, float operands, float accumulator")                                \
  /* simdgroup_load / simdgroup_store of one 8x8 matrix, and the bytes they move */                        \
  X(sgm_load_device, "simdgroup_load from device memory")                                                  \
  X(sgm_load_threadgroup, "simdgroup_load from threadgroup memory")                                        \
  X(sgm_store_device, "simdgroup_store to device memory")                                                  \
  X(sgm_store_threadgroup, "simdgroup_store to threadgroup memory")                                        \
  X(sgm_load_device_bytes, "bytes of simdgroup_load from device memory")                                   \
  X(sgm_load_threadgroup_bytes, "bytes of simdgroup_load from threadgroup memory")                         \
  X(sgm_store_device_bytes, "bytes of simdgroup_store to device memory")                                   \
  X(sgm_store_threadgroup_bytes, "bytes of simdgroup_store to threadgroup memory")                         \
  /* float32 ALU */                                                                                         \
  X(f32_add, "float add/sub")                                                                              \
  X(f32_mul, "float mul")                                                                                  \
  X(f32_fma, "float fma")                                                                                  \
  X(f32_cmp_select, "float compare/select")                                                                \
  X(f32_minmax, "float min/max")                                                                           \
  X(f32_other, "float other (floor, round, copysign, ...)")                                                \
  /* float16 ALU */                                                                                         \
  X(f16_add, "half add/sub")                                                                               \
  X(f16_mul, "half mul")                                                                                   \
  X(f16_fma, "half fma")                                                                                   \
  X(f16_cmp_select, "half compare/select")                                                                 \
  X(f16_minmax, "half min/max")                                                                            \
  X(f16_other, "half other")                                                                               \
  /* transcendental and divide (any float type) */                                                          \
  X(exp2, "exp2")                                                                                          \
  X(log2, "log2")                                                                                          \
  X(exp, "exp")                                                                                            \
  X(log, "log")                                                                                            \
  X(tanh, "tanh")                                                                                          \
  X(rsqrt, "rsqrt")                                                                                        \
  X(reciprocal, "reciprocal (1/x)")                                                                        \
  X(divide, "divide")                                                                                      \
  X(sqrt, "sqrt")                                                                                          \
  X(transcendental_other, "other transcendental (sin, cos, pow, ...)")                                     \
  /* integer ALU (32-bit; 64-bit operations count twice) */                                                 \
  X(int_add, "integer add/sub")                                                                            \
  X(int_mul, "integer mul")                                                                                \
  X(int_logic, "integer and/or/xor/shift")                                                                 \
  X(int_cmp_select, "integer compare/select")                                                              \
  X(int_divide, "integer divide/remainder")                                                                \
  X(address, "address arithmetic (variable pointer offsets)")                                              \
  /* conversions */                                                                                         \
  X(convert, "conversion (float<->int, float->half, float->bfloat)")                                       \
  X(widen, "half->float widening (a free operand modifier on Apple GPUs)")                                 \
  /* memory instructions (bytes are counted per buffer by the executor) */                                  \
  X(device_load, "device/constant load instructions")                                                      \
  X(device_store, "device store instructions")                                                             \
  X(threadgroup_load, "threadgroup load instructions")                                                     \
  X(threadgroup_store, "threadgroup store instructions")                                                   \
  X(generic_load, "load instructions through generic pointers")                                            \
  X(generic_store, "store instructions through generic pointers")                                          \
  /* synchronisation and collectives */                                                                     \
  X(threadgroup_barrier, "threadgroup_barrier")                                                            \
  X(simdgroup_barrier, "simdgroup_barrier")                                                                \
  X(simd_shuffle, "simd shuffles and broadcasts")                                                          \
  X(simd_reduce, "simd reductions, scans, ballots and votes")                                              \
  X(atomic_device, "atomic operations on device memory")                                                   \
  X(atomic_threadgroup, "atomic operations on threadgroup memory")                                         \
  /* Metal 4 TensorOps (matmul2d), in 8x8x8 multiply-add blocks (1024 FLOPs) of this simdgroup's share */   \
  X(tensor_mma_f16, "matmul2d 8x8x8 blocks, 16-bit float operands (half, bfloat)")                         \
  X(tensor_mma_f32, "matmul2d 8x8x8 blocks, a float32 operand")                                            \
  X(tensor_mma_i8, "matmul2d 8x8x8 blocks, 8-bit or narrower integer operands")                          \
  /* appended (the order is the ABI) */                                                                     \
  X(widen_bf16, "bfloat->float widening (a shift without bfloat hardware, free with it)")

enum class Op : uint32_t {
#define MFAGEN_PROFILE_OP_ENUM(name, text) name,
  MFAGEN_PROFILE_OPS(MFAGEN_PROFILE_OP_ENUM)
#undef MFAGEN_PROFILE_OP_ENUM
};

inline constexpr uint32_t kOpCount = 0
#define MFAGEN_PROFILE_OP_COUNT(name, text) +1
    MFAGEN_PROFILE_OPS(MFAGEN_PROFILE_OP_COUNT)
#undef MFAGEN_PROFILE_OP_COUNT
    ;

inline constexpr std::array<std::string_view, kOpCount> kOpNames = {
#define MFAGEN_PROFILE_OP_NAME(name, text) #name,
    MFAGEN_PROFILE_OPS(MFAGEN_PROFILE_OP_NAME)
#undef MFAGEN_PROFILE_OP_NAME
};

inline constexpr std::array<std::string_view, kOpCount> kOpDescriptions = {
#define MFAGEN_PROFILE_OP_TEXT(name, text) text,
    MFAGEN_PROFILE_OPS(MFAGEN_PROFILE_OP_TEXT)
#undef MFAGEN_PROFILE_OP_TEXT
};

constexpr std::string_view name(Op op) { return kOpNames[static_cast<uint32_t>(op)]; }

// A marker's payload (the integer of `__builtin_annotation(payload, "mfagen.op")`):
// the op in the low 8 bits, how many of it in the upper 24.
inline constexpr uint32_t kMarkerOpBits = 8;
inline constexpr const char* kMarkerTag = "mfagen.op";
// The op of an emulation frame's marker: a built-in whose own instructions
// are the emulation's bookkeeping (a loop sequencing a copy the GPU issues
// as one instruction), not counted, while the markers of what it calls
// count. Outside the op range, so it adds to no count.
inline constexpr uint32_t kEmulationFrameOp = (1u << kMarkerOpBits) - 1;
static_assert(kOpCount < kEmulationFrameOp, "the frame marker must not be an op");

using OpCounts = std::array<double, kOpCount>;

}  // namespace mfagen::cpu::profile
