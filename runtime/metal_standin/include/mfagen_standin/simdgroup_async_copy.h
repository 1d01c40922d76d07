// Metal stand-in: the simdgroup asynchronous copies of <metal_simdgroup_future>
// (device <-> threadgroup tiles), which Apple's compiler declares when it
// predefines __HAVE_SIMDGROUP_FUTURE__ (compiler_predefined.h).
// metal-flash-attention v1 (Sources/metal_simdgroup_event at e69ba95, "code
// completion in Xcode 14.2") stages every tile of its attention and GEMM
// kernels through them; its 2024 rewrite declares the same builtins by their
// AIR names, which give the signatures used here:
//   air.simdgroup_async_copy_2d(i64 size, i64 align, dst, i64 dst per row,
//     i64 dst stride, <2 x i64> dst tile, src, i64 src per row, i64 src
//     stride, <2 x i64> src tile, <2 x i64> src origin, i32 clamp mode)
//   air.wait_simdgroup_events(i32 count, events)
//
// Apple documents none of this; the stand-in's semantics:
// * A 2-D copy writes the whole destination tile (x columns, y rows).
//   Element (x, y) of a side lies `y * per_row + x * stride` elements from
//   its pointer. Where x < src tile x and y < src tile y it is the source's
//   element (x, y); elsewhere 0 (clamp_to_zero) or the source tile's nearest
//   edge element (clamp_to_edge). A 1-D copy moves n contiguous elements.
// * A copy is one operation of the simdgroup: every active lane calls it
//   with the same arguments, the active lanes share the work (16-byte pieces
//   of the rows, lane k of n taking pieces k, k + n, ...), and
//   __metal_wait_simdgroup_events is a simdgroup barrier on device and
//   threadgroup memory: after it the whole simdgroup sees the copied tile,
//   other simdgroups after a threadgroup barrier, as on the GPU.
// * Each lane copies its share when it issues the copy. A lane that reads a
//   piece another lane copied, before the wait, is reported as a race
//   (MetalInternals.ReadingAnotherLanesPieceBeforeTheWaitIsARace); one that
//   reads back its own share before waiting is not, though a GPU may not
//   have written it yet.
// * A nonzero source origin is not modelled: it is reported as a finding.
//
// `mfagen profile` counts a copy as the memory instructions of the lanes
// moving it 16 bytes at a time: per piece one load from the source's space
// and one store to the destination's (an element at a time at a tile's
// ragged edge), none of the emulation's loop and index arithmetic. Philip
// Turner's metal-benchmarks calls these copies instructions that hide
// latency; how the GPU sequences them is not public, so this charges the
// bytes they move through the load/store pipeline and nothing else
// (docs/cost_model.md, assumptions).
#pragma once
#include "simd.h"

struct _simdgroup_event_t;
typedef _simdgroup_event_t* __metal_simdgroup_event_t;

namespace metal {
enum class simdgroup_async_copy_clamp_mode { clamp_to_zero = 0, clamp_to_edge = 1 };
}  // namespace metal

// The calling lane's rank among the simdgroup's active lanes, and their count.
struct __mf_async_copy_share {
  uint rank, lanes;
};
METAL_FUNC __mf_async_copy_share __mf_async_copy_lanes() {
  __MF_OP(__mf_op_simd_shuffle, 0);  // bookkeeping of the emulation, not a GPU instruction
  const uint lane = __mf_simd_lane();
  const ::metal::__mf_xchg<uint> x = ::metal::__mf_exchange(lane);
  const __mf_async_copy_share share = {uint(__builtin_popcount(x.mask & ((1u << lane) - 1u))),
                                       uint(__builtin_popcount(x.mask))};
  return share;
}

// What a copy counts. The copy itself is an emulation frame, kept out of
// line in profiling compiles (__MF_OP_FUNC) so that none of its loop
// control counts, not even what the optimizer leaves without a location.
template <class P>
inline constexpr unsigned int __mf_async_load_op =
    __is_same(P, const __local char*) ? __mf_op_threadgroup_load : __mf_op_device_load;
template <class P>
inline constexpr unsigned int __mf_async_store_op =
    __is_same(P, __local char*) ? __mf_op_threadgroup_store : __mf_op_device_store;
template <class D, class S>
METAL_FUNC void __mf_async_copy_piece(D dst, S src) {
  __MF_OP(__mf_async_load_op<S>, 1);
  __MF_OP(__mf_async_store_op<D>, 1);
  __builtin_memcpy(dst, src, 16);
}
template <class D, class S>
METAL_FUNC void __mf_async_copy_one(D dst, S src, ulong size) {
  __MF_OP(__mf_async_load_op<S>, 1);
  __MF_OP(__mf_async_store_op<D>, 1);
  __builtin_memcpy(dst, src, size);
}
template <class D>
METAL_FUNC void __mf_async_fill_one(D dst, ulong size) {
  __MF_OP(__mf_async_store_op<D>, 1);
  __builtin_memset(dst, 0, size);
}

// One side of a 2-D copy: where element (x, y) lies, in bytes.
struct __mf_async_copy_side {
  ulong per_row, stride;
  ulong2 tile;
  METAL_FUNC ulong offset(ulong x, ulong y, ulong size) const { return (y * per_row + x * stride) * size; }
};

// Destination element (x, y) of a 2-D copy: the source's, or the clamp mode's fill.
template <class D, class S>
METAL_FUNC void __mf_async_copy_element(D dst, S src, const __mf_async_copy_side& d, const __mf_async_copy_side& s,
                                        ulong x, ulong y, ulong size, int clamp) {
  D to = dst + d.offset(x, y, size);
  const bool inside = x < s.tile.x && y < s.tile.y;
  if (inside || (clamp == 1 && s.tile.x > 0 && s.tile.y > 0)) {
    const ulong sx = x < s.tile.x ? x : s.tile.x - 1, sy = y < s.tile.y ? y : s.tile.y - 1;
    __mf_async_copy_one(to, src + s.offset(sx, sy, size), size);
  } else {
    __mf_async_fill_one(to, size);
  }
}

// The 2-D copy in bytes, `Size` the element size: rows cut into pieces of
// 16 bytes, shared by the active lanes; a piece wholly inside the source tile
// with unit strides moves as one 16-byte access.
template <ulong Size, class D, class S>
METAL_FUNC void __mf_async_copy_2d(D dst, __mf_async_copy_side d, S src, __mf_async_copy_side s, int clamp) {
  constexpr ulong kPieceElements = Size <= 16 && 16 % Size == 0 ? 16 / Size : 1;
  const ulong pieces_per_row = (d.tile.x + kPieceElements - 1) / kPieceElements;
  if (pieces_per_row == 0 || d.tile.y == 0) return;
  const __mf_async_copy_share share = __mf_async_copy_lanes();
  const bool unit_strides = d.stride == 1 && s.stride == 1;
  // Piece (row y, column c), advancing by `lanes` pieces per step.
  ulong y = share.rank / pieces_per_row, c = share.rank % pieces_per_row;
  const ulong step_rows = share.lanes / pieces_per_row, step_pieces = share.lanes % pieces_per_row;
  while (y < d.tile.y) {
    const ulong x0 = c * kPieceElements;
    const ulong x1 = x0 + kPieceElements < d.tile.x ? x0 + kPieceElements : d.tile.x;
    if (unit_strides && kPieceElements * Size == 16 && x1 - x0 == kPieceElements && x1 <= s.tile.x &&
        y < s.tile.y) {
      __mf_async_copy_piece(dst + d.offset(x0, y, Size), src + s.offset(x0, y, Size));
    } else {
      for (ulong x = x0; x < x1; ++x) __mf_async_copy_element(dst, src, d, s, x, y, Size, clamp);
    }
    c += step_pieces;
    y += step_rows;
    if (c >= pieces_per_row) {
      c -= pieces_per_row;
      ++y;
    }
  }
}

template <class D, class S>
METAL_FUNC void __mf_async_copy_2d_sized(ulong size, D dst, __mf_async_copy_side d, S src, __mf_async_copy_side s,
                                         long2 origin, int clamp) {
  if (origin.x != 0 || origin.y != 0)
    __mf_tensor_finding("simdgroup async copy: a nonzero source origin is not modelled by the stand-in",
                        uint(origin.x), uint(origin.y));
  switch (size) {
    case 1: return __mf_async_copy_2d<1>(dst, d, src, s, clamp);
    case 2: return __mf_async_copy_2d<2>(dst, d, src, s, clamp);
    case 4: return __mf_async_copy_2d<4>(dst, d, src, s, clamp);
    case 8: return __mf_async_copy_2d<8>(dst, d, src, s, clamp);
    case 16: return __mf_async_copy_2d<16>(dst, d, src, s, clamp);
    default: {
      // Any other element size: element by element, the size a run-time value.
      const __mf_async_copy_share share = __mf_async_copy_lanes();
      for (ulong i = share.rank; i < d.tile.x * d.tile.y; i += share.lanes)
        __mf_async_copy_element(dst, src, d, s, i % d.tile.x, i / d.tile.x, size, clamp);
    }
  }
}

__MF_OP_FUNC __metal_simdgroup_event_t __metal_simdgroup_async_copy_2d(ulong size, ulong, __local void* dst,
                                                                     ulong dst_per_row, ulong dst_stride,
                                                                     ulong2 dst_tile, const __global void* src,
                                                                     ulong src_per_row, ulong src_stride,
                                                                     ulong2 src_tile, long2 origin, int clamp) {
  __MF_OP(__mf_op_emulation_frame, 0);
  __mf_async_copy_2d_sized(size, static_cast<__local char*>(dst), {dst_per_row, dst_stride, dst_tile},
                           static_cast<const __global char*>(src), {src_per_row, src_stride, src_tile}, origin,
                           clamp);
  return nullptr;
}
__MF_OP_FUNC __metal_simdgroup_event_t __metal_simdgroup_async_copy_2d(ulong size, ulong, __global void* dst,
                                                                     ulong dst_per_row, ulong dst_stride,
                                                                     ulong2 dst_tile, const __local void* src,
                                                                     ulong src_per_row, ulong src_stride,
                                                                     ulong2 src_tile, long2 origin, int clamp) {
  __MF_OP(__mf_op_emulation_frame, 0);
  __mf_async_copy_2d_sized(size, static_cast<__global char*>(dst), {dst_per_row, dst_stride, dst_tile},
                           static_cast<const __local char*>(src), {src_per_row, src_stride, src_tile}, origin,
                           clamp);
  return nullptr;
}

// A 1-D copy of n elements is a one-row 2-D copy.
METAL_FUNC __metal_simdgroup_event_t __metal_simdgroup_async_copy_1d(ulong size, ulong align, __local void* dst,
                                                                     const __global void* src, ulong n) {
  const ulong2 row = {n, 1};
  const long2 origin = {0, 0};
  return __metal_simdgroup_async_copy_2d(size, align, dst, n, 1, row, src, n, 1, row, origin, 0);
}
METAL_FUNC __metal_simdgroup_event_t __metal_simdgroup_async_copy_1d(ulong size, ulong align, __global void* dst,
                                                                     const __local void* src, ulong n) {
  const ulong2 row = {n, 1};
  const long2 origin = {0, 0};
  return __metal_simdgroup_async_copy_2d(size, align, dst, n, 1, row, src, n, 1, row, origin, 0);
}

// Waiting makes the simdgroup's copies visible to all of its lanes.
METAL_FUNC void __metal_wait_simdgroup_events(int, __metal_simdgroup_event_t*) {
  __MF_OP(__mf_op_simdgroup_barrier, 0);  // the wait is counted by the copies' loads (docs/cost_model.md)
  __mf_simdgroup_barrier(static_cast<uint>(::metal::mem_flags::mem_device | ::metal::mem_flags::mem_threadgroup));
}
