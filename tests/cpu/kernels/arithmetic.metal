// half / bfloat arithmetic and conversions, vector constructors and casts,
// as_type bit casts. Every input comes from a buffer so nothing is folded at
// compile time; the test compares output bits exactly.
#include <metal_stdlib>
using namespace metal;

kernel void float_to_bfloat(device const float* in [[buffer(0)]],
                            device bfloat* out [[buffer(1)]],
                            uint gid [[thread_position_in_grid]]) {
  out[gid] = bfloat(in[gid]);
}

kernel void float_to_half(device const float* in [[buffer(0)]],
                          device half* out [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
  out[gid] = half(in[gid]);
}

// Widening is exact: out[2 gid] = float(h[gid]), out[2 gid + 1] = float(b[gid]).
kernel void widen_to_float(device const half* h [[buffer(0)]],
                           device const bfloat* b [[buffer(1)]],
                           device float* out [[buffer(2)]],
                           uint gid [[thread_position_in_grid]]) {
  out[2 * gid] = float(h[gid]);
  out[2 * gid + 1] = static_cast<float>(b[gid]);
}

#define OPS 8

// Eight results per thread from a[gid], b[gid], c[gid] of type T.
#define ARITHMETIC_KERNEL(NAME, T)                                              \
  kernel void NAME(device const T* a [[buffer(0)]],                             \
                   device const T* b [[buffer(1)]],                             \
                   device const T* c [[buffer(2)]],                             \
                   device T* out [[buffer(3)]],                                 \
                   uint gid [[thread_position_in_grid]]) {                      \
    const T x = a[gid], y = b[gid], z = c[gid];                                 \
    device T* o = out + OPS * gid;                                              \
    o[0] = x + y;                                                               \
    o[1] = x - y;                                                               \
    o[2] = x * y;                                                               \
    o[3] = x / y;                                                               \
    o[4] = x * y + z;                                                           \
    o[5] = x + y + z;                                                           \
    T product = x * y;                                                          \
    T sum = product + z;                                                        \
    o[6] = sum;                                                                 \
    o[7] = -x;                                                                  \
  }

ARITHMETIC_KERNEL(half_ops, half)
ARITHMETIC_KERNEL(bfloat_ops, bfloat)

kernel void half_fma(device const half* a [[buffer(0)]],
                     device const half* b [[buffer(1)]],
                     device const half* c [[buffer(2)]],
                     device half* out [[buffer(3)]],
                     uint gid [[thread_position_in_grid]]) {
  out[gid] = fma(a[gid], b[gid], c[gid]);
}

// Vector constructors and casts convert values (one thread).
//   f[0] = (1.7, -1.7, 2.5, -0.5)   f[1] = (0.1, 65519, 65520, 1 + 2^-11)
//   i[0] = (1, -2, 3, 16777217)
kernel void vector_conversions(device const float4* f [[buffer(0)]],
                               device const int4* i [[buffer(1)]],
                               device int4* out_i [[buffer(2)]],
                               device float4* out_f [[buffer(3)]],
                               device uint4* out_u [[buffer(4)]]) {
  const float4 v = f[0];
  const int4 n = i[0];
  out_i[0] = int4(v);                               // (1, -1, 2, 0)
  out_i[1] = (int4)v;                               // the same through a C-style cast
  out_i[2] = int4(int2(v.xy), int2(v.zw) * 2);      // (1, -1, 4, 0)
  out_i[3] = int4(float4(half4(v)) * 10.0f);        // rounded to half first
  out_f[0] = (float4)n;                             // (1, -2, 3, 16777216)
  out_f[1] = float4(n);
  out_f[2] = float4(v.xy, 3.0f, float(n.y));        // (1.7, -1.7, 3, -2)
  out_f[3] = float4(2.5f);                          // splat
  out_f[4] = float4(v.wzyx);                        // swizzle
  out_f[5] = float4(float3(v.x, v.y, v.z), 7.0f);
  half4 h = half4(f[1]);
  out_u[0] = uint4(as_type<ushort4>(h));            // half bits of each component
  out_u[1] = uint4(uint2(as_type<uint2>(h)), 0u, 0u);
  out_u[2] = uint4(f[1] * 2.0f);                    // (0, 131038, 131040, 2)
  out_u[3] = uint4(as_type<uint>(float(bfloat(f[1].w))), as_type<uint>(float(half(f[1].w))), 0u, 0u);
}

// as_type reinterprets bits (one thread).
//   f[0] = 1.0, f[1] = -2.5, f[2] = 3.14159274 (0x40490fdb)
//   u[0] = 0x3c004000 (half2(2, 1)), u[1] = 0x04030201, u[2] = 0x40490fdb
kernel void bit_casts(device const float* f [[buffer(0)]],
                      device const uint* u [[buffer(1)]],
                      device uint* out [[buffer(2)]],
                      device float* out_f [[buffer(3)]]) {
  out[0] = as_type<uint>(f[0]);                      // 0x3f800000
  out[1] = uint(as_type<int>(f[1]));                 // 0xc0200000
  out_f[0] = as_type<float>(u[2]);                   // 3.14159274
  const half2 h = as_type<half2>(u[0]);
  out_f[1] = float(h.x);                             // 2
  out_f[2] = float(h.y);                             // 1
  const uchar4 bytes = as_type<uchar4>(u[1]);
  out[2] = bytes.x + 10u * bytes.y + 100u * bytes.z + 1000u * bytes.w;  // 4321
  out[3] = as_type<ushort>(half(f[0]));              // 0x3c00
  out[4] = as_type<ushort>(bfloat(f[1]));            // 0xc020
  const uint2 pair = as_type<uint2>(float2(f[0], f[1]));
  out[5] = pair.x;                                   // 0x3f800000
  out[6] = pair.y;                                   // 0xc0200000
  out[7] = as_type<uint>(as_type<float>(u[1]));      // round trip: 0x04030201
}
