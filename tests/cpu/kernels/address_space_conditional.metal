// `?:` whose arms are one class type in different address spaces: valid MSL
// (MLX's loaders write `src_ok ? src[i] : T(0)`), rejected by C++ for OpenCL
// until the cpu backend's conditional repair copies the shared-memory arm.
#include <metal_stdlib>
using namespace metal;

struct Pair {
  float a;
  float b;
};

constant bfloat kTable[2] = {bfloat(2.0f), bfloat(-3.0f)};

// A device lvalue against a private temporary.
kernel void pad_bfloat(device const bfloat* src [[buffer(0)]],
                       device bfloat* dst [[buffer(1)]],
                       constant uint& n [[buffer(2)]],
                       uint gid [[thread_position_in_grid]]) {
  dst[gid] = gid < n ? src[gid] : bfloat(0);
}

// Inside a template (the error is reported once per instantiation), nested,
// and with the lvalue on the right; each arm is evaluated only when chosen.
template <typename T>
METAL_FUNC T pick(device const T* src, threadgroup const T* staged, uint i, uint n) {
  return i < n ? (i % 2 == 0 ? src[i] : staged[i]) : (i == n ? T(1) : src[i - n]);
}

kernel void pick_bfloat(device const bfloat* src [[buffer(0)]],
                        device bfloat* dst [[buffer(1)]],
                        constant uint& n [[buffer(2)]],
                        uint tid [[thread_position_in_threadgroup]]) {
  threadgroup bfloat staged[8];
  staged[tid] = bfloat(float(tid) * 10.0f);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  dst[tid] = pick(src, staged, tid, n);
}

// A user struct from constant memory, and a program-scope constant table.
kernel void pair_or_table(constant Pair* pairs [[buffer(0)]],
                          device float* dst [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
  Pair p = gid < 2 ? pairs[gid] : Pair{7.0f, 8.0f};
  bfloat t = gid < 2 ? kTable[gid] : bfloat(5.0f);
  dst[gid] = p.a + p.b + float(t);
}
