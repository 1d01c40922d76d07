// MLX-style templated kernel: entry points are the [[host_name]] instantiations.
#include <metal_stdlib>
using namespace metal;
template <typename T, int N>
[[kernel]] void scale(device T* a [[buffer(0)]], constant float& s [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
  threadgroup T tile[32];
  tile[i % 32] = a[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  a[i] = T(float(tile[i % 32]) * s * N);
}
template [[host_name("scale_f32")]] [[kernel]] decltype(scale<float, 2>) scale<float, 2>;
template [[host_name("scale_f16")]] [[kernel]] decltype(scale<half, 3>) scale<half, 3>;
