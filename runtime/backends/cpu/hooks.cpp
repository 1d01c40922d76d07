// The extern "C" functions kernel modules call (kernel_abi.h). Each forwards
// to the ThreadgroupRunner running on this OS thread.
#include "mfagen/cpu/kernel_abi.h"
#include "threadgroup_runner.h"

using mfagen::cpu::ThreadgroupRunner;

extern "C" {

__attribute__((visibility("default"))) const void* __mf_access(const void* address, uint64_t size, uint32_t flags,
                                                                const char* loc) {
  ThreadgroupRunner* runner = ThreadgroupRunner::current();
  return runner ? runner->access(address, size, flags, loc) : address;
}

__attribute__((visibility("default"), noinline)) void __mf_threadgroup_barrier(uint32_t mem_flags) {
  ThreadgroupRunner::current()->threadgroup_barrier(mem_flags, __builtin_return_address(0));
}

__attribute__((visibility("default"), noinline)) void __mf_simdgroup_barrier(uint32_t) {
  ThreadgroupRunner::current()->simdgroup_barrier(__builtin_return_address(0));
}

__attribute__((visibility("default"), noinline)) const void* __mf_simd_exchange(const void* value, uint32_t bytes,
                                                                                uint32_t* active_mask) {
  return ThreadgroupRunner::current()->simd_exchange(value, bytes, active_mask, __builtin_return_address(0));
}

__attribute__((visibility("default"))) void* __mf_tg_alloc(uint32_t site, uint64_t size, uint64_t align,
                                                           const char* name) {
  return ThreadgroupRunner::current()->threadgroup_alloc(site, size, align, name);
}

__attribute__((visibility("default"))) uint32_t* __mf_profile_counters(uint32_t function) {
  return ThreadgroupRunner::current()->profile_counters(function);
}

__attribute__((visibility("default"))) uint32_t __mf_simd_lane(void) {
  return ThreadgroupRunner::current()->current_lane();
}

__attribute__((visibility("default"))) void __mf_scope_position(uint32_t* simdgroup, uint32_t* simdgroups) {
  ThreadgroupRunner::current()->scope_position(simdgroup, simdgroups);
}

__attribute__((visibility("default"))) void* __mf_scope_slots(uint32_t bytes) {
  return ThreadgroupRunner::current()->scope_slots(bytes);
}

__attribute__((visibility("default"))) uint32_t __mf_tensor_layout_seed(void) {
  return ThreadgroupRunner::current()->tensor_layout_seed();
}

__attribute__((visibility("default"), noinline)) void __mf_tensor_finding(const char* what, uint32_t a, uint32_t b) {
  ThreadgroupRunner::current()->tensor_finding(what, a, b, __builtin_return_address(0));
}

__attribute__((visibility("default"))) void __mf_traffic_pause(uint32_t paused) {
  ThreadgroupRunner::current()->traffic_pause(paused != 0);
}

__attribute__((visibility("default"))) void __mf_traffic_add(const void* operand, uint64_t bytes) {
  ThreadgroupRunner::current()->traffic_add(operand, bytes);
}
}
