// The binary interface between a compiled kernel module and the cpu backend's
// executor. The module side is declared in the Metal stand-in header
// (runtime/metal_standin/include/mfagen_standin/abi.h, C++ for OpenCL dialect)
// and in the code the instrumentation pass inserts; keep the three in step and
// bump kAbiVersion (part of the compile cache key) on any change.
#pragma once

#include <cstdint>

namespace mfagen::cpu::abi {

inline constexpr uint32_t kAbiVersion = 4;
inline constexpr uint32_t kMaxBufferIndex = 31;    // Metal: buffer(0..30)
inline constexpr uint32_t kSimdWidth = 32;
inline constexpr uint32_t kMaxSimdExchangeBytes = 64;

// Flags of __mf_access. Bits 0-2: the address space of the pointer.
enum AccessFlags : uint32_t {
  kSpaceMask = 0x7,
  kSpaceDevice = 1,
  kSpaceConstant = 2,
  kSpaceThreadgroup = 3,
  kSpaceGeneric = 4,
  kRead = 1u << 3,
  kWrite = 1u << 4,
  kAtomic = 1u << 5,
};

// Everything a kernel entry needs from the grid, for one thread.
// Layout mirrors `struct __mf_launch_args` of the stand-in's abi.h.
struct LaunchArgs {
  uint64_t buffers[kMaxBufferIndex];              // [[buffer(n)]] base addresses
  uint64_t threadgroup_buffers[kMaxBufferIndex];  // [[threadgroup(n)]] base addresses
  uint32_t thread_position_in_grid[3];
  uint32_t threadgroup_position_in_grid[3];
  uint32_t thread_position_in_threadgroup[3];
  uint32_t threads_per_threadgroup[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t threads_per_grid[3];
  uint32_t thread_index_in_threadgroup;
  uint32_t thread_index_in_simdgroup;
  uint32_t simdgroup_index_in_threadgroup;
  uint32_t simdgroups_per_threadgroup;
  uint32_t threads_per_simdgroup;
};

// Tables a module compiled for profiling exports (instrument/ProfileCounters.cpp):
//   uint32_t __mf_profile_function_count;
//   ProfileFunction __mf_profile_functions[count];
//   uint32_t __mf_profile_block_begin[blocks + 1];  // per counted block: first entry
//   uint32_t __mf_profile_entries[2 * entries];     // (op, count) pairs, op = profile::Op
// Function f's counted blocks are first_block .. first_block + blocks - 1.
struct ProfileFunction {
  const char* name;
  uint32_t first_block;
  uint32_t blocks;
  uint32_t registers;  // estimated peak of live 32-bit registers
  uint32_t reserved;
};

// Every kernel `NAME` is exported as `extern "C" void __mf_kernel_NAME(const LaunchArgs*)`.
using EntryFn = void (*)(const LaunchArgs*);
inline constexpr const char* kEntryPrefix = "__mf_kernel_";

}  // namespace mfagen::cpu::abi

// Implemented by the executor, called from kernel code.
extern "C" {
// Inserted by the instrumentation pass before each load/store through a
// device, constant, threadgroup or generic pointer. `loc` is "file:line:col".
// Returns the address the access must use: `address` itself, or a scratch
// area when the access is out of bounds (so a buggy kernel cannot corrupt the
// host while its finding is reported).
const void* __mf_access(const void* address, uint64_t size, uint32_t flags, const char* loc);
void __mf_threadgroup_barrier(uint32_t mem_flags);
void __mf_simdgroup_barrier(uint32_t mem_flags);
// Rendezvous of the active lanes of the caller's simdgroup. Each lane offers
// `bytes` (<= 64) bytes; returns 32 slots of `bytes` bytes (slot i = lane i's
// value, valid until the lane's next exchange) and the active-lane mask.
const void* __mf_simd_exchange(const void* value, uint32_t bytes, uint32_t* active_mask);
// Storage of a kernel-scope `threadgroup T name[...]` declaration: the same
// address for every thread of a threadgroup (keyed by `site`).
void* __mf_tg_alloc(uint32_t site, uint64_t size, uint64_t align, const char* name);
// thread_index_in_simdgroup of the calling thread (simdgroup_matrix layout).
uint32_t __mf_simd_lane(void);
// Metal 4 TensorOps stand-in (mfagen_standin/tensor_ops.h):
// The calling thread's simdgroup_index_in_threadgroup and simdgroups_per_threadgroup.
void __mf_scope_position(uint32_t* simdgroup, uint32_t* simdgroups);
// A per-threadgroup table of `bytes` (<= 64) bytes per thread (thread-index
// major) through which the threads of an execution_simdgroups<N> scope
// publish their operands between two threadgroup barriers.
void* __mf_scope_slots(uint32_t bytes);
// 0: cooperative tensors use the default element layout (MLX NAX's); any
// other value permutes it (LaunchOptions::tensor_layout_seed).
uint32_t __mf_tensor_layout_seed(void);
// Undefined behaviour of a tensor operation (a detector finding at the caller):
// `what` names it; `a` and `b` are numbers it mentions (or ~0u).
void __mf_tensor_finding(const char* what, uint32_t a, uint32_t b);
// Traffic of an emulated operation counted as the GPU moves it: while the
// calling thread's reads are paused (1) they are checked by the detectors
// but not added to the byte counters; __mf_traffic_add adds `bytes` read at
// `operand`'s memory (threadgroup or the device buffer holding it) instead.
void __mf_traffic_pause(uint32_t paused);
void __mf_traffic_add(const void* operand, uint64_t bytes);
// Profiling compiles: the calling thread's block counters of `function`
// (an index into __mf_profile_functions), one uint32_t per counted block.
uint32_t* __mf_profile_counters(uint32_t function);
}
