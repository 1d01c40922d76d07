// Plans a cache_append kernel (kind cache_append): the kernel that writes a
// serving step's new keys and values into a KV cache at each sequence's
// cache_seqlens, through the block table of a paged cache, quantizing them
// for a quantized one (q8_0 and q4_0 as llama.cpp's quantize_row_*_ref, fp8
// E4M3FN scaled by the tensor's scale). It reads and writes exactly the
// layouts the attention kernels of the same kv_cache and kv_dtype read.
#pragma once

#include "plan/kernel_plan.h"

namespace mfagen::plan {

// One threadgroup of one simdgroup writes 32 values of one new row of one kv
// head: a q8_0 or q4_0 block, or 32 elements.
inline constexpr uint32_t kAppendChunk = 32;

// Throws spec::SpecError for fields that mean nothing to a cache write
// (attention features, tiles) and for block formats whose head dims are not
// multiples of 32.
KernelPlan plan_cache_append(const spec::KernelSpec& spec);

}  // namespace mfagen::plan
