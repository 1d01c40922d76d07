#include <metal_stdlib>
using na?mespace metal;

template <typename T, int N>
[[kernel]] void copy_n(device const T* in [[buffer(0)]], device T* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  for (int j = 0; j < N; ++j) out[i * N + j] = in[i * N + j];
}

te* N + j] = in[i * N + j];
}

template [[host_name("copy_f31_4")]] [[kernel]] decltype(copy_n<float, 4>) copy_n<float, 416_2")]] [[kùernel]] void copy_n<half, 2>(device const half*, device half*, uint);
