// The planner's default tiles, keyed by head dim and target family
// (DESIGN.md section 4). M1/M2 (apple7, apple8) have a fixed register file
// per thread, so larger query blocks amortize each K/V tile over more rows;
// M3 and later (apple9, apple10) cache registers dynamically, and smaller
// query blocks keep more threadgroups resident. Large head dims take fewer
// keys per step so that K/V passes stay wide.
#include <algorithm>

#include "plan/kernel_plan.h"

namespace mfagen::plan {

spec::Tiles table_tiles(uint32_t head_dim, uint32_t head_dim_v, spec::DType dtype, spec::Target target) {
  const uint32_t widest = std::max(head_dim, head_dim_v);
  const bool fixed_registers = target == spec::Target::apple7 || target == spec::Target::apple8;
  const bool wide_elements = dtype == spec::DType::float32;
  if (widest <= 64) return fixed_registers ? spec::Tiles{64, 32, 4} : spec::Tiles{32, 32, 4};
  if (widest <= 128) return fixed_registers && !wide_elements ? spec::Tiles{64, 32, 4} : spec::Tiles{32, 32, 4};
  if (widest <= 256) return spec::Tiles{32, 16, 4};
  return spec::Tiles{16, 16, 2};
}

spec::Tiles decode_table_tiles(uint32_t head_dim, uint32_t head_dim_v) {
  // 16 rows (two simdgroups of one 8-row tile) hold a GQA group of 8 heads
  // for two queries, or 16 queries of one head; the key loop is split over
  // threadgroups instead of making blocks taller.
  return std::max(head_dim, head_dim_v) <= 256 ? spec::Tiles{16, 32, 2} : spec::Tiles{16, 16, 2};
}

spec::Tiles backward_table_tiles(uint32_t head_dim, uint32_t head_dim_v) {
  // Both blocks are rows of some kernel (queries in dq, keys in dkdv), so
  // both are multiples of 8 x simdgroups; large head dims keep fewer rows
  // because each row carries four fragment sets.
  return std::max(head_dim, head_dim_v) <= 128 ? spec::Tiles{32, 32, 4} : spec::Tiles{16, 16, 2};
}

}  // namespace mfagen::plan
