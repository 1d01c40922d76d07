// Metal stand-in: the binary interface between a compiled kernel module and
// the cpu backend's executor (module side). Mirrors
// runtime/backends/cpu/include/mfagen/cpu/kernel_abi.h — keep both in step.
//
// Dialect: C++ for OpenCL 2021 (clang-16 -x clcpp -cl-std=clc++2021
// -cl-no-stdinc). Unqualified pointers are __generic.
#pragma once
// cl_khr_fp16 is also a predefined macro (1), and the cpu backend's
// preprocessing expands macros in the pragmas it prints (compiler.cpp,
// preprocess): the name must reach the compile unexpanded.
#pragma push_macro("cl_khr_fp16")
#undef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma pop_macro("cl_khr_fp16")
#include "lowering_support.h"
#include "memory_scope.h"  // declared by Apple's compiler without an include
#include "compiler_predefined.h"  // macros Apple's compiler predefines

extern "C" {
// Inserted by the instrumentation pass before loads/stores (not called here).
const void* __mf_access(const void* address, unsigned long size, unsigned int flags, const char* loc);
void __mf_threadgroup_barrier(unsigned int mem_flags);
void __mf_simdgroup_barrier(unsigned int mem_flags);
// Rendezvous of the active lanes of the caller's simdgroup. Each lane offers
// `bytes` (<= 64) bytes; returns 32 slots of `bytes` bytes (slot i = lane i's
// value, valid until lane i's next exchange) and the active-lane mask.
const void* __mf_simd_exchange(const void* value, unsigned int bytes, unsigned int* active_mask);
// Storage of a kernel-scope `threadgroup T name[...]` declaration.
void* __mf_tg_alloc(unsigned int site, unsigned long size, unsigned long align, const __constant char* name);
// thread_index_in_simdgroup of the calling thread (0..31).
unsigned int __mf_simd_lane(void);
// TensorOps (tensor_ops.h): scope position, per-threadgroup exchange table,
// cooperative-tensor layout seed, undefined-behaviour findings.
void __mf_scope_position(unsigned int* simdgroup, unsigned int* simdgroups);
void* __mf_scope_slots(unsigned int bytes);
unsigned int __mf_tensor_layout_seed(void);
void __mf_tensor_finding(const __constant char* what, unsigned int a, unsigned int b);
// Traffic of an emulated operation (kernel_abi.h): pause the thread's read
// counters, add an operand's bytes once.
void __mf_traffic_pause(unsigned int paused);
void __mf_traffic_add(const void* operand, unsigned long bytes);
}

// Layout mirrors mfagen::cpu::abi::LaunchArgs (uint64_t -> unsigned long).
struct __mf_launch_args {
  unsigned long buffers[31];
  unsigned long threadgroup_buffers[31];
  unsigned int thread_position_in_grid[3];
  unsigned int threadgroup_position_in_grid[3];
  unsigned int thread_position_in_threadgroup[3];
  unsigned int threads_per_threadgroup[3];
  unsigned int threadgroups_per_grid[3];
  unsigned int threads_per_grid[3];
  unsigned int thread_index_in_threadgroup;
  unsigned int thread_index_in_simdgroup;
  unsigned int simdgroup_index_in_threadgroup;
  unsigned int simdgroups_per_threadgroup;
  unsigned int threads_per_simdgroup;
};
static_assert(sizeof(__mf_launch_args) == 592, "__mf_launch_args layout drifted from kernel_abi.h");
static_assert(__builtin_offsetof(__mf_launch_args, threadgroup_buffers) == 248, "layout");
static_assert(__builtin_offsetof(__mf_launch_args, thread_position_in_grid) == 496, "layout");
static_assert(__builtin_offsetof(__mf_launch_args, thread_index_in_threadgroup) == 568, "layout");
static_assert(__builtin_offsetof(__mf_launch_args, threads_per_simdgroup) == 584, "layout");

// Converts a 3-component position/size to the type the kernel declared for a
// [[thread_position_in_grid]]-style parameter: scalars take v[0]; 2- and
// 3-component vectors take the first N components. Anything else is an error.
template <class __E, int __N>
using __mf_abi_ext_vec = __E __attribute__((ext_vector_type(__N)));

template <class T>
struct __mf_thread_id_conv {
  static constexpr bool __ok = __is_integral(T) && !__is_same(T, bool);
  static_assert(__ok,
                "position/size kernel parameters (thread_position_in_grid & co) must be uint, ushort, int, short or a "
                "2/3-component vector of those");
  static T __get(const unsigned int* v) { return static_cast<T>(v[0]); }
};
template <class __E, int __N>
struct __mf_thread_id_conv<__mf_abi_ext_vec<__E, __N>> {
  static_assert(__N == 2 || __N == 3, "position/size kernel parameter vectors have 2 or 3 components");
  static_assert(__is_same(__E, unsigned int) || __is_same(__E, unsigned short) || __is_same(__E, int) ||
                    __is_same(__E, short),
                "position/size kernel parameter vectors must be uintN, ushortN, intN or shortN");
  static __mf_abi_ext_vec<__E, __N> __get(const unsigned int* v) {
    __mf_abi_ext_vec<__E, __N> r = {};
    for (int i = 0; i < __N; ++i) r[i] = static_cast<__E>(v[i]);
    return r;
  }
};

template <class T>
inline __attribute__((always_inline)) T __mf_thread_id(const unsigned int* v) {
  return __mf_thread_id_conv<T>::__get(v);
}
