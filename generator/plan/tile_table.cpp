// The planner's default tiles, keyed by head dim (DESIGN.md section 4).
//
// Forward tiles are the fastest rows `mfagen profile` predicts for f16 at
// D 64 / 128 / 256, Sq = Sk 4096, B 1, H 16, on the M1 Max and M3 Max models
// (docs/kernel_speed.md has the search and its figures): eight simdgroups of
// one 8-row tile each (64 query rows) share every K/V tile staged in
// threadgroup memory, which keeps staging per MMA low, 24 simdgroups
// resident per core, and many threadgroups per launch (a short dispatch
// tail). Up to D 128 a thread keeps at most 80 float32 fragment values (no
// spills on a 128-register file); D 256 takes 16 keys per step and still
// keeps 132, which would spill (the model does not charge spills). Every
// family gets the same rows: since K and V are staged as float32, the
// element type no longer changes the threadgroup memory a tile needs.
#include <algorithm>

#include "plan/kernel_plan.h"

namespace mfagen::plan {

spec::Tiles table_tiles(uint32_t head_dim, uint32_t head_dim_v, spec::DType, spec::Target) {
  const uint32_t widest = std::max(head_dim, head_dim_v);
  if (widest <= 128) return spec::Tiles{64, 64, 8};
  if (widest <= 256) return spec::Tiles{64, 16, 8};
  return spec::Tiles{16, 16, 2};
}

spec::Tiles decode_table_tiles(uint32_t head_dim, uint32_t head_dim_v) {
  // One simdgroup of 8 rows (the q heads of a GQA group of up to 8 for one
  // query, or several queries of smaller groups): decode moves K and V once
  // and is bound by memory, so the key loop is split over many small
  // threadgroups (about 1024, choose_splits) instead of making blocks
  // taller; a second simdgroup would idle whenever the group has 8 rows or
  // fewer, and the threadgroup would wait for its busier one.
  return std::max(head_dim, head_dim_v) <= 128 ? spec::Tiles{8, 32, 1} : spec::Tiles{8, 16, 1};
}

spec::Tiles backward_table_tiles(uint32_t head_dim, uint32_t head_dim_v) {
  // Both blocks are rows of some kernel (queries in dq, keys in dkdv), so
  // both are multiples of 8 x simdgroups. One 8-row tile per simdgroup, as in
  // the forward; up to D 128, eight simdgroups share each staged q/dO (K/V)
  // tile, which the profile predicts fastest (docs/kernel_speed.md). Every
  // row carries four fragment sets (k, v, dk, dv in dkdv), so large head
  // dims keep fewer rows.
  const uint32_t widest = std::max(head_dim, head_dim_v);
  if (widest <= 128) return spec::Tiles{64, 64, 8};
  if (widest <= 256) return spec::Tiles{32, 32, 4};
  return spec::Tiles{16, 16, 2};
}

}  // namespace mfagen::plan
