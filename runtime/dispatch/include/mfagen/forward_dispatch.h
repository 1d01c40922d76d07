// Dispatch planning for forward attention kernels (DESIGN.md sections 3, 8):
// a kernel's launch facts + a call's shape and strides -> a DispatchPlan,
// plain data that any backend (cpu here, metal on Apple) executes. No
// dependency on the generator, clang or JSON.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mfagen {

enum class MaskInput { none, boolean, additive };

// How k and v are stored (DESIGN.md section 13): as elements of the kernel's
// dtype, or quantized: llama.cpp's q8_0 (34-byte blocks of 32 values) and q4_0
// (18-byte blocks), or fp8 E4M3FN (one byte per value, one float32 scale per
// tensor). Strides of k and v count storage units: elements, blocks or bytes.
enum class KvFormat { elements, q8_0, q4_0, fp8_e4m3 };

// The spec's spelling: "q8_0", "q4_0", "fp8_e4m3" ("elements" for unquantized k and v).
inline const char* to_string(KvFormat f) {
  return f == KvFormat::q8_0 ? "q8_0" : f == KvFormat::q4_0 ? "q4_0" : f == KvFormat::fp8_e4m3 ? "fp8_e4m3" : "elements";
}

// Bytes of one storage unit of k or v, and the units one row of `values` takes
// (blocks run along D; q8_0 and q4_0 need `values` to be a multiple of 32).
inline uint64_t kv_unit_bytes(KvFormat f, uint32_t element_bytes) {
  return f == KvFormat::q8_0 ? 34 : f == KvFormat::q4_0 ? 18 : f == KvFormat::fp8_e4m3 ? 1 : element_bytes;
}
inline uint64_t kv_row_units(KvFormat f, uint32_t values) {
  return f == KvFormat::q8_0 || f == KvFormat::q4_0 ? values / 32 : values;
}

// A tensor that a kernel's score_mod or mask_mod reads (DESIGN.md section
// 13): float32 or int32, contiguous, row-major, each extent a linear form of
// the call's sizes: c[0] + c[1]·B + c[2]·Hq + c[3]·Hkv + c[4]·Sq + c[5]·Sk.
// The generator proved every index the kernel reads inside these extents.
struct CapturedTensor {
  std::string name;    // as the spec's expressions read it: "bias"
  std::string buffer;  // the kernel parameter and buffer name: "capture_bias"
  // Backward kernels: score_mod reads it as float32, so its gradient is
  // written to buffer `gradient_buffer` ("d_capture_bias").
  bool gradient = false;
  std::string gradient_buffer;

  bool is_float = true;  // float32; false: int32
  std::vector<std::array<int64_t, 6>> extents;
};

// What the runtime must know about a generated forward kernel to launch it
// (recorded in manifest.json by the generator).
struct ForwardKernelInfo {
  std::string entry;
  uint32_t element_bytes = 2;     // q, k, v, out: 2 (half, bfloat) or 4 (float)
  uint32_t head_dim = 0;
  uint32_t head_dim_v = 0;
  uint32_t block_q = 0;
  uint32_t block_k = 0;
  uint32_t threads = 0;           // per threadgroup
  uint32_t threadgroup_bytes = 0; // static, declared in the kernel
  bool gqa = true;
  bool lse = true;
  MaskInput mask = MaskInput::none;
  bool window = false;
  bool softcap = false;
  bool alibi = false;
  bool sinks = false;           // a float32 sink logit per q head (buffer "sinks"); backward also writes d_sinks
  bool varlen = false;          // packed sequences: q (total_q, Hq, D), ..., cu_seqlens_q and cu_seqlens_k
  bool paged = false;           // k, v are paged caches read through block_table, cache_seqlens
  KvFormat kv_format = KvFormat::elements;  // quantized k and v are dequantized inside the kernel
  bool dropout = false;         // Philox dropout of the P.V weights (ForwardCall::dropout_p, seed, offset)
  // score_mod / mask_mod (DESIGN.md section 13): which of them the kernel
  // compiled in, an id of their text (0 without; selection matches it
  // exactly), the float32 scalars they take (buffer "mod_scalars") and the
  // tensors they read (one buffer each, by name).
  bool score_mod = false;
  bool mask_mod = false;
  // mask_mod's block classes: one table per batch entry only if it reads b,
  // per head only if it reads h (mask_tables()).
  bool mask_by_batch = false, mask_by_head = false;
  uint64_t mods_id = 0;
  uint32_t mod_scalars = 0;
  std::vector<CapturedTensor> captures;
  bool decode = false;          // split-K decode: entry writes partials, combine_entry merges them
  std::string combine_entry;
  bool backward = false;        // entry + "_preprocess", "_dkdv", "_dq" (+ "_dsinks"): dQ, dK, dV from dO, out and lse
  bool cache_append = false;    // not attention: writes new k and v into the cache (cache_append_dispatch.h)
  // Packed queries on a paged cache (varlen + paged, simdgroup_matrix): the
  // kernel also runs a planned batch (ForwardCall::batch, Library::plan_batch)
  // and has a second entry, entry + "_merge", that merges split key ranges.
  bool planned_batches = false;
  // Products by mpp::tensor_ops::matmul2d (Metal 4 TensorOps, DESIGN.md
  // section 15) instead of simdgroup_matrix: the kernel runs only on devices
  // that support them (manifest "requires"; KernelEntry::requirements).
  bool tensor_ops = false;
};

struct AttentionShape {
  uint64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_k = 1;
  bool operator==(const AttentionShape&) const = default;
};

// The elements a captured tensor holds for a call's shape, in `count`; false
// when an extent is below 1 or past 2^31 - 1 (its index in `bad_extent`) or
// the count passes 2^31 - 1 (kernels index captured tensors with int).
// Allocation-free: the runtime's launch plan calls it per call.
inline bool captured_count(const CapturedTensor& t, const AttentionShape& s, uint64_t& count,
                           size_t* bad_extent = nullptr) {
  constexpr __int128 kLargest = 0x7fffffff;
  const int64_t sizes[6] = {1, int64_t(s.batch), int64_t(s.heads_q), int64_t(s.heads_kv), int64_t(s.seq_q),
                            int64_t(s.seq_k)};
  count = 1;
  for (size_t d = 0; d < t.extents.size(); ++d) {
    __int128 extent = 0;  // coefficients below 2^31 times sizes below 2^32: no overflow in 128 bits
    for (int i = 0; i < 6; ++i) extent += __int128(t.extents[d][i]) * sizes[i];
    if (extent < 1 || extent > kLargest) {
      if (bad_extent) *bad_extent = d;
      return false;
    }
    count *= uint64_t(extent);
    if (count > uint64_t(kLargest)) return false;
  }
  return true;
}

// captured_count(), or DispatchError naming the tensor and what is wrong.
uint64_t captured_elements(const CapturedTensor& t, const AttentionShape& shape);

// Element strides of a 4-d tensor (batch, head, row); the last dimension is contiguous.
struct Strides3 {
  uint64_t batch = 0, head = 0, row = 0;
};

struct ForwardStrides {
  Strides3 q, k, v, out;
  uint64_t lse_batch = 0, lse_head = 0;  // lse rows are contiguous
};

// Contiguous BHSD strides for a shape (k and v in units of `kv`).
ForwardStrides contiguous_bhsd(const AttentionShape& shape, uint32_t head_dim, uint32_t head_dim_v,
                               KvFormat kv = KvFormat::elements);

// Strides of packed varlen tensors (DESIGN.md section 13): q (total_q, Hq, D),
// k (total_k, Hkv, D), v (total_k, Hkv, Dv), out (total_q, Hq, Dv), lse (Hq,
// total_q); the batch stride is 0 (each sequence starts at its cu_seqlens row).
ForwardStrides packed_varlen(const AttentionShape& shape, uint64_t total_q, uint32_t head_dim, uint32_t head_dim_v,
                             KvFormat kv = KvFormat::elements);

// Strides of a paged call: q and out dense BHSD, k and v contiguous caches
// (num_pages, page_size, Hkv, D) with strides {page, head, slot}.
ForwardStrides paged_kv(const AttentionShape& shape, uint64_t page_size, uint32_t head_dim, uint32_t head_dim_v,
                        KvFormat kv = KvFormat::elements);

// Strides of packed queries on a paged cache (layout varlen, kv_cache paged):
// q, out and lse as packed_varlen(), k and v as paged_kv().
ForwardStrides packed_paged(const AttentionShape& shape, uint64_t total_q, uint64_t page_size, uint32_t head_dim,
                            uint32_t head_dim_v, KvFormat kv = KvFormat::elements);

// Checks a paged call's block table (batch x max_pages) and cache lengths
// (batch) as the host holds them: every length between 0 and max_pages x
// page_size and at most `longest`, every page a sequence uses below
// num_pages. Throws DispatchError naming the first offending entry.
void check_paged_cache(const int32_t* block_table, const int32_t* cache_seqlens, uint64_t batch, uint64_t max_pages,
                       uint64_t num_pages, uint64_t page_size, uint64_t longest);

// Checks cu_seqlens of a varlen call as the host holds them: batch + 1
// entries, starting at 0, never decreasing, ending at `total` rows, no
// sequence longer than `longest`. Throws DispatchError naming `what`
// ("cu_seqlens_q") and the first offending entry. Kernels also clamp what
// they read, so bad device data cannot make them access memory out of bounds.
void check_cu_seqlens(const int32_t* cu_seqlens, size_t count, uint64_t batch, uint64_t total, uint64_t longest,
                      std::string_view what);

// A planned batch (kernels with planned_batches; Library::plan_batch builds
// it from the host's cu_seqlens_q and cache_seqlens, once per serving step,
// and every layer's call reuses it). One threadgroup per work item and q
// head: query block `q_block` of sequence `batch` against its keys
// [key_begin, key_end). A work item with partial >= 0 is split `split` of
// `splits` of that block's keys: its rows go to partial slots
// partial + (row * heads_q + head) * splits + split, and the merge launch
// combines them in split order (bit-identical run to run); partial -1 writes
// out and lse directly. A decode's item (slices > 0: a sequence whose
// queries times heads_q / heads_kv fit one query block) takes a GQA group's
// (q head, query) pairs as its rows, as the split-K decode kernel does: its
// heads_q threadgroups are `slices` key slices (y / heads_kv) of each kv head
// (y % heads_kv), each reading its kv head's keys once for the whole group;
// slice s writes split `split + s`. The layouts are the kernel's BatchWork /
// BatchMerge (8 int32 each); the caller binds them at kForwardWorkItems and
// kForwardMergeItems.
struct BatchWork {
  int32_t batch = 0, q_block = 0, key_begin = 0, key_end = 0, partial = -1, split = 0, splits = 1, slices = 0;
};
struct BatchMerge {
  int32_t batch = 0, q_block = 0, rows = 0, splits = 0, partial = 0, unused[3] = {0, 0, 0};
};
struct BatchPlan {
  std::vector<BatchWork> work;    // at least one item (a no-op one for a batch without queries)
  std::vector<BatchMerge> merges; // merge_count items, then a zero sentinel when there are none
  uint32_t merge_count = 0;
  uint64_t partial_slots = 0;     // (row, head, split) slots of the split blocks
  // heads_q / heads_kv of the call planned when some decode's item packs a
  // GQA group's rows (BatchWork::slices), else 0: such a plan runs only with
  // calls of that group size (their rows are the group's q heads).
  uint64_t gqa_group = 0;
};

// mask_mod kernels: where a call's block classes (the _blocks launch's
// table of hidden / full / partial blocks) come from. computed: the _blocks
// launch writes them into scratch, every call; only: the _blocks launch
// alone runs, into the caller's block_classes buffer (plan's size); given:
// the caller binds classes an `only` call computed for the same kernel,
// shape, scalars and captured tensors, and the _blocks launch is skipped
// (FlexAttention's BlockMask, reused across calls and layers).
enum class BlockClasses : uint8_t { computed, only, given };

// One call's runtime values beyond shape and strides. Values for features
// the kernel was generated without must stay at their defaults.
struct ForwardCall {
  AttentionShape shape;
  ForwardStrides strides;
  double scale = 0;                 // <= 0: 1/sqrt(head_dim)
  double softcap = 0;               // > 0 for softcap kernels
  int64_t window_left = -1;         // window kernels: keys before the diagonal, -1 unbounded
  int64_t window_right = -1;        // keys after the diagonal, -1 unbounded
  std::array<uint64_t, 4> mask_strides{};  // mask kernels: element strides over (B, Hq, Sq, Sk), 0 = broadcast
  bool alibi_per_batch = false;     // alibi kernels: slopes (B, Hq) instead of (Hq,)
  uint32_t splits = 0;              // decode kernels: key splits; 0 = chosen from the shape
  // varlen kernels: rows of the packed q/out and k/v. shape.batch is the
  // number of sequences and shape.seq_q, shape.seq_k the longest ones (the grid
  // covers them; shorter sequences leave the extra threadgroups at once).
  // On a paged cache total_k stays 0: each sequence's keys are its cache's.
  uint64_t total_q = 0, total_k = 0;
  // paged kernels: k (num_pages, page_size, Hkv, D) and v (..., Dv) with
  // strides {page, head, slot} (paged_kv()); the block table has max_pages
  // entries per sequence. shape.seq_k is the longest cache length.
  uint64_t page_size = 0, num_pages = 0, max_pages = 0;
  // planned_batches kernels: the batch's plan (owned by the caller, alive
  // until the launch ran); null runs the grid over (query blocks, heads, batch).
  const BatchPlan* batch_plan = nullptr;
  BlockClasses block_classes = BlockClasses::computed;  // mask_mod kernels only
  // fp8_e4m3 kernels: each stored value of k (v) times k_scale (v_scale).
  double k_scale = 1, v_scale = 1;
  // dropout kernels (DESIGN.md section 13): drop probability in [0, 1), the
  // Philox key and the counter's last word; the backward takes the forward's.
  double dropout_p = 0;
  uint64_t dropout_seed = 0;
  uint32_t dropout_offset = 0;
};

// The dropout words of a call's params: floor(p * 2^32) and the float32 factor 1 / (1 - p).
inline uint32_t dropout_threshold(double p) { return uint32_t(p * 4294967296.0); }
inline float dropout_scale(double p) { return float(1.0 / (1.0 - p)); }
inline bool dropout_valid(bool kernel_dropout, const ForwardCall& call) {
  if (!kernel_dropout) return call.dropout_p == 0 && call.dropout_seed == 0 && call.dropout_offset == 0;
  return call.dropout_p >= 0 && call.dropout_p < 1;
}

// fp8 kernels take finite, nonzero float32 scales; other kernels none (both stay 1).
inline bool kv_scales_valid(KvFormat format, double k_scale, double v_scale) {
  if (format != KvFormat::fp8_e4m3) return k_scale == 1 && v_scale == 1;
  const float k = float(k_scale), v = float(v_scale);
  return k == k && v == v && k != 0 && v != 0 && k - k == 0 && v - v == 0;  // not NaN, not 0, not inf
}

// Writes the fields of a kernel's AttentionParams in the template's order
// (the 8-byte strides, the 4-byte shape and scale, then the fields of the
// kernel's features) through `w.put(value)`; plan_forward (a growing vector)
// and the runtime's allocation-free launch plan (fixed storage) share it.
// `scale` is the softmax scale in use; splits, split_keys and row_blocks
// matter to decode kernels only. The caller pads the struct to 8 bytes.
template <class Writer>
void write_params(Writer& w, const ForwardKernelInfo& kernel, const ForwardCall& call, double scale, uint32_t splits,
                  uint32_t split_keys, uint32_t row_blocks) {
  const ForwardStrides& st = call.strides;
  const AttentionShape& s = call.shape;
  for (const Strides3* t : {&st.q, &st.k, &st.v, &st.out}) w.put(t->batch).put(t->head).put(t->row);
  w.put(st.lse_batch).put(st.lse_head);
  if (kernel.mask != MaskInput::none)
    for (uint64_t m : call.mask_strides) w.put(m);
  w.put(uint32_t(s.batch)).put(uint32_t(s.heads_q)).put(uint32_t(s.heads_kv));
  w.put(uint32_t(s.seq_q)).put(uint32_t(s.seq_k));
  w.put(float(scale * 1.4426950408889634));  // scale * log2(e)
  if (kernel.softcap || kernel.score_mod) w.put(float(scale));  // score_mod sees the scaled score
  if (kernel.softcap) w.put(float(call.softcap));
  if (kernel.window) w.put(int32_t(call.window_left)).put(int32_t(call.window_right));
  if (kernel.alibi) w.put(uint32_t(call.alibi_per_batch ? s.heads_q : 0));
  if (kernel.paged) w.put(uint32_t(call.page_size)).put(uint32_t(call.max_pages)).put(uint32_t(call.num_pages));
  if (kernel.kv_format == KvFormat::fp8_e4m3) w.put(float(call.k_scale)).put(float(call.v_scale));
  if (kernel.dropout)
    w.put(dropout_threshold(call.dropout_p)).put(dropout_scale(call.dropout_p)).put(uint32_t(call.dropout_seed))
        .put(uint32_t(call.dropout_seed >> 32)).put(call.dropout_offset);
  if (kernel.varlen) w.put(uint32_t(call.total_q)).put(uint32_t(call.total_k));
  if (kernel.decode) w.put(splits).put(split_keys).put(row_blocks);
  if (kernel.planned_batches)
    w.put(uint32_t(call.batch_plan ? call.batch_plan->work.size() : 0))
        .put(uint32_t(call.batch_plan ? call.batch_plan->merge_count : 0));
}

// Whether a backward kernel writes gradients of captured tensors (its _dcaptures launch).
inline bool writes_capture_gradients(const ForwardKernelInfo& k) {
  for (const CapturedTensor& t : k.captures)
    if (t.gradient) return true;
  return false;
}

// Whether a mask_mod kernel classifies blocks first (its _blocks launch):
// every one but decode, whose rows are (head, query) pairs of a GQA group
// and whose mask_mod decides pair by pair.
inline bool classifies_blocks(const ForwardKernelInfo& k) { return k.mask_mod && !k.decode; }

// The tables of block classes a mask_mod kernel's _blocks launch writes.
inline uint64_t mask_tables(const ForwardKernelInfo& k, const AttentionShape& s) {
  return (k.mask_by_batch ? s.batch : 1) * (k.mask_by_head ? s.heads_q : 1);
}

// Decode: seq_q may be at most this (DESIGN.md section 4).
inline constexpr uint64_t kMaxDecodeQueries = 16;

// Element strides of a mask tensor of `extents` (each 1 or the full size of
// (B, Hq, Sq, Sk)), contiguous, with 0 along the broadcast dimensions.
std::array<uint64_t, 4> broadcast_strides(const std::array<uint64_t, 4>& extents);

struct BufferRequirement {
  uint32_t index = 0;
  std::string name;   // q, k, v, out, lse, params, mask, alibi_slopes, sinks, out_partial, lse_partial, ...
  uint64_t bytes = 0; // smallest buffer the kernel may touch for this call
  bool written = false;
  bool scratch = false;  // the backend allocates it for the call (decode partials); not a user tensor
};

// One kernel launch; a plan's launches run in order, each after the previous
// one completed.
struct KernelLaunch {
  std::string entry;
  std::array<uint32_t, 3> threadgroups{1, 1, 1};
  std::array<uint32_t, 3> threads_per_threadgroup{1, 1, 1};
  uint32_t threadgroup_bytes = 0;
  std::vector<uint32_t> buffers;  // the buffer indices this kernel binds
};

struct DispatchPlan {
  std::vector<KernelLaunch> launches;
  std::vector<BufferRequirement> buffers;  // by index; includes params and scratch buffers
  std::vector<std::byte> params;           // contents of the params buffer (the kernel's AttentionParams)
  AttentionShape shape;                    // the call's shape: what backends report to the call trace
  const BufferRequirement* buffer(std::string_view name) const;
};

// A call the kernel cannot run: the message names the argument and what was expected.
class DispatchError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

DispatchPlan plan_forward(const ForwardKernelInfo& kernel, const ForwardCall& call);

// Decode key splits when a call gives none: enough threadgroups to fill a
// large Apple GPU (40 cores x 24 resident simdgroups, about 1024
// one-simdgroup threadgroups) without splits shorter than `min_keys` (a power
// of two), whose partial results would cost more to merge than they save.
// Inline and free of 64-bit division: the runtime's allocation-free launch
// plan calls it per call, as plan_forward does.
inline uint32_t choose_decode_splits(uint64_t seq_k, uint64_t other_threadgroups, uint64_t min_keys = 256) {
  constexpr uint32_t kTargetThreadgroups = 1024;
  const uint64_t wanted = other_threadgroups >= kTargetThreadgroups
                              ? 1
                              : (kTargetThreadgroups + uint32_t(other_threadgroups) - 1) / uint32_t(other_threadgroups);
  const uint64_t most = (seq_k + min_keys - 1) >> __builtin_ctzll(min_keys);
  const uint64_t splits = wanted < most ? wanted : most;
  return uint32_t(splits > 1 ? splits : 1);
}

// ceil(a / b) (b >= 1): a shift for powers of two (tile sizes), else a
// 32-bit division whenever the operands fit (the decode plan's chain of
// divisions is the launch plan's main cost; 64-bit division is slower still).
inline uint64_t ceil_div(uint64_t a, uint64_t b) {
  if ((b & (b - 1)) == 0) return (a >> __builtin_ctzll(b)) + ((a & (b - 1)) != 0);
  if ((a | b) <= UINT32_MAX) return uint32_t(a) / uint32_t(b) + (uint32_t(a) % uint32_t(b) != 0);
  return a / b + (a % b != 0);
}

// How a decode call meets its kernel (DESIGN.md section 4). The rows of a
// GQA group (heads_q / heads_kv x seq_q) fill 8-row tiles. A threadgroup runs
// `simdgroups` simdgroups: the fewest power of two (1, 2, 4, 8) whose tiles
// hold the rows, at most the kernel's (block_q / rows per simdgroup) and 8. One
// query of GQA 8 thus runs one simdgroup, and speculative decoding shares
// each staged K/V tile among all of its simdgroups; `row_blocks` threadgroups
// cover the rows. Keys are split as choose_decode_splits() says (or as
// `call_splits` asks), each split a whole number of key blocks, none empty.
// The splits count threadgroups, not simdgroups: a call with more rows is
// matrix-bound and gains from more, shorter threadgroups (fewer would leave a
// long last wave, in the profile). `valid` is false when call_splits exceeds
// seq_k. Allocation-free: the runtime's launch plan calls it per call, as
// plan_forward does.
// The shortest split a decode call of `simdgroups` simdgroups per threadgroup
// gets: several simdgroups make each key dearer, so splits of 128 keys still
// amortize the merge (GQA 8 at 2 queries on the M4 Max model: 205 -> 174 us);
// one simdgroup keeps 256 (128 was slower at one query).
inline uint64_t decode_min_split_keys(uint32_t simdgroups) { return simdgroups > 1 ? 128 : 256; }

struct DecodeGrid {
  uint32_t simdgroups = 1, row_blocks = 0, splits = 0, split_keys = 0;
  bool valid = true;
  uint32_t threads() const { return 32 * simdgroups; }
};
inline DecodeGrid decode_grid(const ForwardKernelInfo& kernel, const AttentionShape& s, uint32_t call_splits) {
  DecodeGrid g;
  const uint64_t rows = uint64_t(uint32_t(s.heads_q) / uint32_t(s.heads_kv)) * s.seq_q;
  const uint32_t most = kernel.threads / 32;  // the kernel's; the template compiles staging for up to 8 per call
  const uint64_t tile_rows = kernel.block_q / (most ? most : 1);  // rows per simdgroup
  while (2 * g.simdgroups <= std::min(most, 8u) && g.simdgroups * tile_rows < rows) g.simdgroups *= 2;
  const uint64_t block_rows = g.simdgroups * tile_rows;
  g.row_blocks = uint32_t(ceil_div(rows, block_rows));
  g.splits = call_splits ? call_splits
                         : choose_decode_splits(s.seq_k, s.batch * s.heads_kv * g.row_blocks,
                                                decode_min_split_keys(g.simdgroups));
  if (g.splits > s.seq_k) {
    g.valid = false;
    return g;
  }
  g.split_keys = uint32_t(ceil_div(s.seq_k, g.splits));
  g.split_keys = uint32_t(ceil_div(g.split_keys, kernel.block_k)) * kernel.block_k;
  g.splits = uint32_t(ceil_div(s.seq_k, g.split_keys));  // no empty split
  return g;
}

// Buffer indices of generated forward kernels (DESIGN.md section 8 reads them from the manifest).
inline constexpr uint32_t kForwardQ = 0, kForwardK = 1, kForwardV = 2, kForwardOut = 3, kForwardLse = 4,
                          kForwardParams = 5, kForwardMask = 6, kForwardAlibi = 7, kForwardOutPartial = 8,
                          kForwardLsePartial = 9, kBackwardDOut = 10, kBackwardDq = 11, kBackwardDk = 12,
                          kBackwardDv = 13, kBackwardDRows = 14, kForwardSinks = 15, kBackwardDSinks = 16,
                          kForwardCuSeqlensQ = 17, kForwardCuSeqlensK = 18, kForwardBlockTable = 19,
                          kForwardCacheSeqlens = 20, kForwardModScalars = 21, kForwardFirstCapture = 22,
                          kForwardBlockClasses = 30, kBackwardFirstCaptureGrad = 26, kBackwardCaptureGradPartials = 29;
// Planned batches (a paged kernel has no backward buffers): the work and merge items; the split rows'
// partial results at the decode partials' indices.
inline constexpr uint32_t kForwardWorkItems = 10, kForwardMergeItems = 11;
inline constexpr uint32_t kMaxCaptures = 4;  // indices 22..25
// The buffers the score_mod / mask_mod functions read, bound to every launch that evaluates them:
// scalars, captured tensors and mask_mod's block classes.
inline constexpr uint32_t kModInputsMask = (1u << 21) | (0xFu << 22) | (1u << 30);
// Metal's buffer indices: 0..30.
inline constexpr uint32_t kMaxBufferIndices = 31;

}  // namespace mfagen
