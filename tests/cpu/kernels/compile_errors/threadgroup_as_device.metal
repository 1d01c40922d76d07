// Must not compile: a threadgroup pointer passed where a device pointer is
// expected (Metal: "no matching function" / address space mismatch).
#include <metal_stdlib>
using namespace metal;

inline void scale_in_place(device float* p, float s) {
  *p *= s;
}

kernel void scale_tile(device float* out [[buffer(0)]],
                       uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float tile[32];
  tile[tid] = out[tid];
  scale_in_place(&tile[tid], 2.0f);  // MARK: error
  out[tid] = tile[tid];
}
