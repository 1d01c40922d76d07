// Plans a forward kernel: tiles from the spec or the table, then the derived
// sizes the template needs, each checked against the hardware limits with a
// message that says which spec field to change.
#include "plan/kernel_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/cache_append_plan.h"
#include "plan/refusal.h"
#include "plan/tensor_ops.h"

namespace mfagen::plan {
namespace {

uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
uint32_t round_up(uint32_t a, uint32_t b) { return ceil_div(a, b) * b; }


// Quantized k and v (DESIGN.md section 13) serve inference, in blocks of 32
// along D for q8_0 and q4_0; a float kv_dtype must be the spec's own.
void refuse_unsupported_kv_dtype(const spec::KernelSpec& s) {
  if (s.kv_dtype == spec::KvDType::as_dtype) return;
  if (!spec::kv_quantized(s.kv_dtype))
    refuse(s, "kv_dtype",
           fmt::format("k and v are stored in the spec's dtype ({}) unless quantized: use kv_dtype q8_0, q4_0 or "
                       "fp8_e4m3, or leave the field out",
                       spec::to_string(s.dtype)));
  if (s.kind == spec::Kind::backward)
    refuse(s, "kv_dtype",
           "a quantized cache serves inference (kind forward or decode); the training backward takes k and v in "
           "the spec's dtype and writes dK and dV there: leave kv_dtype out");
  const bool blocks = spec::kv_in_blocks(s.kv_dtype);
  if (blocks && (s.head_dim % 32 != 0 || s.head_dim_v % 32 != 0))
    refuse(s, "kv_dtype",
           fmt::format("{} stores blocks of 32 values along the head dim: head_dim ({}) and head_dim_v ({}) must be "
                       "multiples of 32 (fp8_e4m3 takes any head dim)",
                       spec::to_string(s.kv_dtype), s.head_dim, s.head_dim_v));
}

// Kinds of DESIGN.md section 2 whose kernels do not exist yet: refused with
// a clear error rather than generated as something else.
void refuse_unimplemented(const spec::KernelSpec& s) {
  if (s.kind == spec::Kind::backward && !s.lse)
    refuse(s, "lse", "a backward kernel recomputes P from the forward's lse: lse must be true");
  if (s.layout == spec::Layout::varlen && s.kind == spec::Kind::decode)
    refuse(s, "layout",
           "varlen packs sequences for prefill and training (kind forward or backward); a decode kernel takes "
           "dense queries (at most 16 per sequence): use layout dense");
  if (s.layout == spec::Layout::varlen && s.mask != spec::MaskKind::none)
    refuse(s, "layout",
           "a mask is a dense (B, Hq, Sq, Sk) tensor, which a packed batch of sequences of different lengths does "
           "not have: use mask none with layout varlen (causal and window apply per sequence)");
  if (s.kv_cache == spec::KvCache::paged && s.kind == spec::Kind::backward)
    refuse(s, "kv_cache",
           "a paged cache serves inference (kind forward: prefill against the cache, or decode); the training "
           "backward takes dense k and v: use kv_cache dense");
  refuse_unsupported_kv_dtype(s);
  if (s.dropout && (s.kind == spec::Kind::decode || s.kv_cache == spec::KvCache::paged || spec::kv_quantized(s.kv_dtype)))
    refuse(s, "dropout",
           "dropout is a training feature (kind forward or backward on dense k and v); decode, paged and quantized "
           "caches serve inference: leave dropout out");
  if (s.mods.any() && s.layout == spec::Layout::varlen)
    refuse(s, s.mods.score_mod.empty() ? "mask_mod" : "score_mod",
           "score_mod and mask_mod compile into kernels on dense queries in this version (layout dense; dense, "
           "paged and quantized caches with the forward and decode)");
  if (s.kind == spec::Kind::backward && expr::gradient_captures(s.mods).size() > expr::kMaxCaptureGradients)
    refuse(s, "score_mod",
           fmt::format("the backward writes a gradient for each float captured tensor score_mod reads, at most {} "
                       "(Metal's buffer indices run out)",
                       expr::kMaxCaptureGradients));
  if (s.dropout && s.layout == spec::Layout::varlen)
    refuse(s, "dropout",
           "dropout with packed sequences is not supported in this version (the mask's counter is per dense "
           "batch entry): use layout dense");
}

// The widest pass over D (multiple of 8) whose K/V tile fits in threadgroup
// memory, balanced so that every pass has about the same width. Passes
// narrower than 32 columns (or than the head dim, if smaller) waste most of
// each barrier, so block_k values that would need them are refused.
uint32_t choose_chunk(const spec::KernelSpec& s, uint32_t block_k, uint32_t bytes, uint32_t reserved_bytes,
                      uint32_t occupancy_budget) {
  // q8_0 and q4_0 caches are dequantized a block of 32 values at a time, so
  // their passes cover whole blocks (D and Dv are multiples of 32 then).
  const bool blocks = spec::kv_in_blocks(s.kv_dtype);
  const uint32_t step = blocks ? 32 : 8;
  const uint32_t widest = round_up(std::max(s.head_dim, s.head_dim_v), step);
  const uint32_t narrowest = std::min(widest, 32u);
  const uint32_t fits = (kMaxThreadgroupBytes - reserved_bytes) / (block_k * bytes) / step * step;
  // Prefer passes narrow enough that enough threadgroups stay resident to
  // hide latency (occupancy_budget); never narrower than `narrowest`.
  const uint32_t budget =
      occupancy_budget > reserved_bytes ? (occupancy_budget - reserved_bytes) / (block_k * bytes) / step * step : 0;
  if (fits < narrowest)
    refuse(s, "tiles.block_k",
           fmt::format("block_k {} needs {} bytes of threadgroup memory for a {}-column K/V tile of {}, over the "
                       "{}-byte limit; use block_k <= {}",
                       block_k, uint64_t(block_k) * narrowest * bytes, narrowest,
                       spec::kv_quantized(s.kv_dtype) ? "float32 (dequantized)" : spec::to_string(s.dtype),
                       kMaxThreadgroupBytes, (kMaxThreadgroupBytes - reserved_bytes) / (narrowest * bytes) / 8 * 8));
  const uint32_t passes = ceil_div(widest, std::min(fits, std::max(budget, narrowest)));
  return round_up(ceil_div(widest, passes), step);
}

}  // namespace

std::string kv_storage_type(const spec::KernelSpec& s) {
  switch (s.kv_dtype) {
    case spec::KvDType::q8_0: return "block_q8_0";
    case spec::KvDType::q4_0: return "block_q4_0";
    case spec::KvDType::fp8_e4m3: return "uchar";
    default: break;
  }
  return s.dtype == spec::DType::float16 ? "half" : s.dtype == spec::DType::bfloat16 ? "bfloat" : "float";
}

bool plain_forward_staging(const spec::KernelSpec& s) {
  return s.kind == spec::Kind::forward && !uses_tensor_ops(s) && !spec::kv_quantized(s.kv_dtype) &&
         s.kv_cache != spec::KvCache::paged;
}

bool splits_key_blocks(const spec::KernelSpec& s) { return plain_forward_staging(s) && s.mods.mask_mod.empty(); }

bool planned_batches(const spec::KernelSpec& s) {
  return s.kind == spec::Kind::forward && s.layout == spec::Layout::varlen && s.kv_cache == spec::KvCache::paged &&
         !uses_tensor_ops(s);
}

namespace {

std::vector<BufferSlot> buffer_table(const spec::KernelSpec& s) {
  const std::string elem(s.dtype == spec::DType::float16    ? "half"
                         : s.dtype == spec::DType::bfloat16 ? "bfloat"
                                                            : "float");
  std::vector<BufferSlot> buffers = {
      {kQIndex, "q", "device const " + elem + "*", false},
      {kKIndex, "k", "device const " + kv_storage_type(s) + "*", false},
      {kVIndex, "v", "device const " + kv_storage_type(s) + "*", false},
      {kOutIndex, "out", "device " + elem + "*", true},
  };
  if (s.lse) buffers.push_back({kLseIndex, "lse", "device float*", true});
  buffers.push_back({kParamsIndex, "params", "constant AttentionParams&", false});
  if (s.mask == spec::MaskKind::boolean) buffers.push_back({kMaskIndex, "mask", "device const bool*", false});
  if (s.mask == spec::MaskKind::additive) buffers.push_back({kMaskIndex, "mask", "device const " + elem + "*", false});
  if (s.alibi) buffers.push_back({kAlibiIndex, "alibi_slopes", "device const float*", false});
  if (s.sinks) buffers.push_back({kSinksIndex, "sinks", "device const float*", false});
  if (s.kv_cache == spec::KvCache::paged) {
    buffers.push_back({kBlockTableIndex, "block_table", "device const int*", false});
    buffers.push_back({kCacheSeqlensIndex, "cache_seqlens", "device const int*", false});
  }
  if (s.layout == spec::Layout::varlen) {
    buffers.push_back({kCuSeqlensQIndex, "cu_seqlens_q", "device const int*", false});
    // Keys packed like the queries, unless they come from a paged cache (its cache_seqlens).
    if (s.kv_cache != spec::KvCache::paged)
      buffers.push_back({kCuSeqlensKIndex, "cu_seqlens_k", "device const int*", false});
  }
  if (!s.mods.scalars.empty())
    buffers.push_back({expr::kModScalarsIndex, "mod_scalars", "constant float*", false});
  for (size_t i = 0; i < s.mods.captures.size(); ++i)
    buffers.push_back({expr::kFirstCaptureIndex + uint32_t(i), expr::capture_buffer_name(s.mods.captures[i].name),
                       s.mods.captures[i].type == expr::CaptureType::float32 ? "device const float*"
                                                                              : "device const int*",
                       false});
  if (!s.mods.mask_mod.empty() && s.kind != spec::Kind::decode)
    buffers.push_back({expr::kBlockClassesIndex, "block_classes", "device uchar*", true, true});
  if (s.kind == spec::Kind::backward) {
    const std::vector<size_t> gradients = expr::gradient_captures(s.mods);
    for (size_t i = 0; i < gradients.size(); ++i)
      buffers.push_back({expr::kFirstCaptureGradIndex + uint32_t(i),
                         expr::capture_gradient_buffer_name(s.mods.captures[gradients[i]].name), "device float*", true});
    if (!gradients.empty())
      buffers.push_back({expr::kCaptureGradPartialsIndex, "capture_grad_partials", "device float*", true, true});
  }
  if (s.kind == spec::Kind::decode || planned_batches(s)) {
    buffers.push_back({kOutPartialIndex, "out_partial", "device float*", true, true});
    buffers.push_back({kLsePartialIndex, "lse_partial", "device float*", true, true});
  }
  if (planned_batches(s)) {
    buffers.push_back({kWorkItemsIndex, "work_items", "device const BatchWork*", false});
    buffers.push_back({kMergeItemsIndex, "merge_items", "device const BatchMerge*", false});
  }
  if (s.kind == spec::Kind::backward) {
    // out and lse are the forward's, read here.
    buffers[kOutIndex].msl_type = "device const " + elem + "*";
    buffers[kOutIndex].written = false;
    buffers[kLseIndex].msl_type = "device const float*";
    buffers[kLseIndex].written = false;
    buffers.push_back({kDOutIndex, "d_out", "device const " + elem + "*", false});
    buffers.push_back({kDqIndex, "dq", "device " + elem + "*", true});
    buffers.push_back({kDkIndex, "dk", "device " + elem + "*", true});
    buffers.push_back({kDvIndex, "dv", "device " + elem + "*", true});
    buffers.push_back({kDRowsIndex, "d_rows", "device float*", true, true});
    if (s.sinks) buffers.push_back({kDSinksIndex, "d_sinks", "device float*", true});
  }
  return buffers;
}

// sizeof(AttentionParams) in templates/attention_forward.metal.mustache:
// 14 strides (+ 4 mask strides) of 8 bytes, then 4-byte fields, padded to 8.
uint32_t params_bytes(const spec::KernelSpec& s) {
  uint32_t bytes = 8 * (14 + (s.mask != spec::MaskKind::none ? 4 : 0));
  bytes += 4 * 6;                                           // batch, heads_q, heads_kv, seq_q, seq_k, scale_log2
  if (s.softcap || !s.mods.score_mod.empty()) bytes += 4;  // scale (softcap and score_mod see the scaled score)
  if (s.softcap) bytes += 4;                                // softcap
  if (s.window) bytes += 4 * 2;                             // window_left, window_right
  if (s.alibi) bytes += 4;                                  // alibi_batch_stride
  if (s.kv_cache == spec::KvCache::paged) bytes += 4 * 3;   // page_size, max_pages, num_pages
  if (s.layout == spec::Layout::varlen) bytes += 4 * 2;     // total_q, total_k
  if (s.kv_dtype == spec::KvDType::fp8_e4m3) bytes += 4 * 2;  // k_scale, v_scale
  if (s.dropout) bytes += 4 * 5;  // threshold, scale, seed (2 words), offset
  if (s.kind == spec::Kind::decode) bytes += 4 * 3;         // splits, split_keys, row_blocks
  if (planned_batches(s)) bytes += 4 * 2;                   // work_items, merge_items
  return round_up(bytes, 8);
}

// Key groups 1.. hand their rows' max and total (64 floats per 8-row tile:
// two per lane) and then O, merge_tiles 8-column tiles at a time (64 floats
// each), to group 0 through the memory of the K/V tiles. As many tiles per
// pass as the tiles' memory holds, or the occupancy budget if that is more;
// at least one.
void plan_key_group_merge(KernelPlan& p, uint32_t occupancy_budget) {
  const uint32_t slots = (p.key_groups - 1) * (p.simdgroups / p.key_groups) * p.row_tiles;
  const uint32_t room = std::max(p.threadgroup_bytes, occupancy_budget);
  const auto merge_bytes = [&](uint32_t tiles) { return 4 * 64 * slots * (1 + tiles); };
  p.merge_tiles = p.dv_tiles;
  while (p.merge_tiles > 1 && merge_bytes(p.merge_tiles) > room) --p.merge_tiles;
  p.threadgroup_bytes = std::max(p.threadgroup_bytes, merge_bytes(p.merge_tiles));
  if (p.threadgroup_bytes > kMaxThreadgroupBytes)
    refuse(p.spec, "tiles.key_groups",
           fmt::format("key_groups {} with block_q {}, simdgroups {} hand {} bytes of softmax state to group 0, over "
                       "Metal's {} bytes of threadgroup memory; use fewer key groups or a smaller block_q",
                       p.key_groups, p.block_q, p.simdgroups, p.threadgroup_bytes, kMaxThreadgroupBytes));
}

}  // namespace

KernelPlan plan_kernel(const spec::KernelSpec& s) {
  if (s.kind == spec::Kind::cache_append) return plan_cache_append(s);
  refuse_unimplemented(s);
  KernelPlan p;
  p.spec = s;
  p.entry = s.name;
  p.tensor_ops = uses_tensor_ops(s);
  if (s.kind == spec::Kind::decode) p.combine_entry = s.name + "_combine";
  if (s.kind == spec::Kind::forward) p.entries = {s.name};
  if (planned_batches(s)) p.entries.push_back(s.name + "_merge");
  if (s.kind == spec::Kind::decode) p.entries = {s.name, p.combine_entry};
  if (s.kind == spec::Kind::backward) p.entries = {s.name + "_preprocess", s.name + "_dkdv", s.name + "_dq"};
  if (s.kind == spec::Kind::backward && s.sinks) p.entries.push_back(s.name + "_dsinks");
  // The captured tensors' gradients are summed last.
  if (s.kind == spec::Kind::backward && !expr::gradient_captures(s.mods).empty()) p.entries.push_back(s.name + "_dcaptures");
  // mask_mod's block classes are computed first (DESIGN.md section 13).
  // (Decode kernels evaluate mask_mod pair by pair: their rows are a GQA group's (head, query) pairs.)
  if (!s.mods.mask_mod.empty() && s.kind != spec::Kind::decode) p.entries.insert(p.entries.begin(), s.name + "_blocks");
  p.tiles_from_table = !s.tiles.has_value();
  const spec::Tiles tiles = s.tiles.value_or(table_tiles(s));
  p.block_q = tiles.block_q;
  p.block_k = tiles.block_k;
  p.simdgroups = tiles.simdgroups;
  p.key_groups = tiles.key_groups;  // table rows with key groups serve only kernels that split key blocks

  p.threads = p.simdgroups * kSimdWidth;
  if (p.threads > kMaxThreadsPerThreadgroup)
    refuse(s, "tiles.simdgroups",
           fmt::format("{} simdgroups are {} threads per threadgroup, over Metal's limit of {}; use at most {}",
                       p.simdgroups, p.threads, kMaxThreadsPerThreadgroup, kMaxThreadsPerThreadgroup / kSimdWidth));
  if (p.key_groups > 1 && !splits_key_blocks(s))
    refuse(s, "tiles.key_groups",
           fmt::format("key_groups {} splits the key blocks of the simdgroup_matrix forward with dense, unquantized "
                       "K and V and no mask_mod; this {} kernel takes key_groups 1",
                       p.key_groups, spec::to_string(s.kind)));
  if (p.key_groups == 0 || p.simdgroups % p.key_groups != 0)
    refuse(s, "tiles.key_groups",
           fmt::format("key_groups {} must divide simdgroups {}", p.key_groups, p.simdgroups));
  const uint32_t row_simdgroups = p.simdgroups / p.key_groups;
  if (p.block_q % (8 * row_simdgroups) != 0)
    refuse(s, "tiles.block_q",
           fmt::format("block_q {} must be a multiple of 8 x simdgroups = {} (each simdgroup owns whole 8-row tiles)",
                       p.block_q, 8 * row_simdgroups));
  if (s.kind == spec::Kind::backward && p.block_k % (8 * p.simdgroups) != 0)
    refuse(s, "tiles.block_k",
           fmt::format("block_k {} must be a multiple of 8 x simdgroups = {} (backward: each simdgroup owns whole "
                       "8-key tiles of dK and dV)",
                       p.block_k, 8 * p.simdgroups));
  p.row_tiles = p.block_q / (8 * row_simdgroups);
  p.d_tiles = ceil_div(s.head_dim, 8);
  p.dv_tiles = ceil_div(s.head_dim_v, 8);

  const bool backward = s.kind == spec::Kind::backward;
  // K and V are staged in their own type: half the threadgroup bytes of
  // float32 tiles, so passes are twice as wide and the tile reads (a bound of
  // the model) halve. simdgroup_matrix kernels load each fragment in that type
  // (the MMA's documented signature shares one type among its operands) and
  // widen it lane by lane; TensorOps kernels multiply 16-bit operands
  // directly. The forward and decode widen bfloat once, as they stage it:
  // widening bfloat is an integer shift where there is no bfloat hardware
  // (M1, M2), and a fragment's elements would be widened once per row tile
  // and pass instead of once per block. Quantized caches are dequantized to
  // float32 as they are staged.
  const bool widened_when_staged =
      spec::kv_quantized(s.kv_dtype) || (!backward && !p.tensor_ops && s.dtype == spec::DType::bfloat16);
  p.staged_bytes = widened_when_staged ? 4 : spec::dtype_bytes(s.dtype);
  // A lane holds two values of each fragment: float32 for O and the scores;
  // the forward keeps q in the type K is staged in (16-bit: one register).
  const uint32_t q_registers_per_tile = !backward && p.staged_bytes == 2 ? 1 : 2;
  p.fragment_registers = p.row_tiles * (q_registers_per_tile * p.d_tiles + 2 * (p.dv_tiles + p.block_k / 8));
  if (backward) {
    const uint32_t key_row_tiles = p.block_k / (8 * p.simdgroups);
    // Dropout keeps each weight's factor (dQ, dK/dV) and the dropped P (dK/dV) in fragments too.
    const uint32_t dropout = s.dropout ? 1 : 0;
    const uint32_t dq = 2 * p.row_tiles * (2 * p.d_tiles + p.dv_tiles + (3 + dropout) * p.block_k / 8);
    const uint32_t dkdv = 2 * key_row_tiles * (2 * p.d_tiles + 2 * p.dv_tiles + (3 + 2 * dropout) * p.block_q / 8);
    p.fragment_registers = std::max(dq, dkdv);
  }
  // TensorOps forward kernels keep S (rows x block_k) and O (rows x Dv) in
  // cooperative tensors spread over the simdgroup's 32 lanes; q stays in memory.
  if (p.tensor_ops) {
    const uint32_t rows = p.block_q / p.simdgroups;
    p.fragment_registers = ceil_div(rows * p.block_k + rows * round_up(s.head_dim_v, 16), kSimdWidth);
  }
  const uint32_t limit = backward ? kMaxBackwardFragmentRegistersPerThread : kMaxFragmentRegistersPerThread;
  if (p.fragment_registers > limit)
    refuse(s, "tiles",
           fmt::format("head_dim {} / head_dim_v {} with block_q {}, block_k {}, simdgroups {} keep {} 32-bit "
                       "registers of fragment values per thread ({} query row tiles per simdgroup), over the limit "
                       "of {}; use more simdgroups, a smaller block_q or a smaller block_k",
                       s.head_dim, s.head_dim_v, p.block_q, p.block_k, p.simdgroups, p.fragment_registers, p.row_tiles,
                       limit));

  // Backward kernels stage block_q rows (q, dO) in dkdv and block_k rows (K, V) in dq.
  // dkdv also keeps the lse and D of a query block (2 floats per query).
  // Forward key groups each take block_k keys of one staged block.
  const uint32_t staged_rows = backward ? std::max(p.block_q, p.block_k) : p.key_groups * p.block_k;
  // Paged caches keep the cache row of each key of the block (uint).
  uint32_t reserved = backward ? 2 * 4 * p.block_q : s.kv_cache == spec::KvCache::paged ? 4 * p.block_k : 0;
  // TensorOps forward kernels: per simdgroup, five float32 statistics per row
  // and a P tile (rows x block_k; 16-bit beside 16-bit K/V tiles, else float32).
  if (p.tensor_ops) {
    const uint32_t rows = p.block_q / p.simdgroups;
    const uint32_t p_bytes = spec::kv_quantized(s.kv_dtype) ? 4 : spec::dtype_bytes(s.dtype);
    reserved += p.simdgroups * (4 * 5 * rows + p_bytes * rows * p.block_k);
  }
  // Threadgroup memory that lets kSaturationSimdgroupsPerCore simdgroups be
  // resident. A decode call may run a single simdgroup per threadgroup (one
  // query of a small GQA group), so decode kernels budget for that.
  const uint32_t call_simdgroups = s.kind == spec::Kind::decode ? 1 : p.simdgroups;
  const uint32_t occupancy_budget = std::min(
      kMaxThreadgroupBytes, kThreadgroupMemoryPerCore / std::max(1u, kSaturationSimdgroupsPerCore / call_simdgroups));
  p.chunk = choose_chunk(s, staged_rows, p.staged_bytes, reserved, occupancy_budget);
  p.d_passes = ceil_div(s.head_dim, p.chunk);
  p.dv_passes = ceil_div(s.head_dim_v, p.chunk);
  p.threadgroup_bytes = staged_rows * p.chunk * p.staged_bytes + reserved;
  // When D and Dv fit one pass and two tiles fit, each operand keeps its own
  // tile. Backward: q (K) is staged once per block instead of twice. Forward
  // (simdgroup_matrix, plain K/V): K and V are staged together, one barrier
  // pair per key block instead of two.
  if ((backward || plain_forward_staging(s)) && p.d_passes == 1 && p.dv_passes == 1 &&
      2 * staged_rows * p.chunk * p.staged_bytes + reserved <= occupancy_budget) {
    p.resident_tiles = true;
    p.threadgroup_bytes = 2 * staged_rows * p.chunk * p.staged_bytes + reserved;
  }
  if (p.key_groups > 1) plan_key_group_merge(p, occupancy_budget);
  p.buffers = buffer_table(s);
  p.params_bytes = params_bytes(s);
  return p;
}

}  // namespace mfagen::plan
