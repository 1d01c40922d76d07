// MLX's fence.metal (issue 35), in its style, written for mfagen's tests:
// metal::thread_scope named before any #include (Apple's compiler declares
// it), and Metal 3.2's `volatile coherent(system) device` buffers with a
// system-scope fence. data[i] = 2 * data[i] + 1 for i < n.
namespace metal {
constexpr constant metal::thread_scope thread_scope_widest = static_cast<thread_scope>(3);
}

#include <metal_atomic>

[[kernel]] void coherent_update(
    volatile coherent(system) device uint* data [[buffer(0)]],
    const constant uint& n [[buffer(1)]],
    uint i [[thread_position_in_grid]]) {
  if (i < n) {
    data[i] = data[i] * 2u + 1u;
  }
  metal::atomic_thread_fence(metal::mem_flags::mem_device, metal::memory_order_seq_cst, metal::thread_scope_widest);
}
