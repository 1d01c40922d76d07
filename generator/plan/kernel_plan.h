// The Plan stage (DESIGN.md section 1): a validated KernelSpec becomes a
// KernelPlan — tile sizes, threads, threadgroup memory, the buffer table and
// function constants — or an error naming the spec's file and JSON path when
// the request exceeds what an Apple GPU allows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/kernel_spec.h"

namespace mfagen::plan {

// Hardware limits of every Apple GPU family the planner targets (DESIGN.md section 4).
inline constexpr uint32_t kMaxThreadgroupBytes = 32 * 1024;
inline constexpr uint32_t kMaxThreadsPerThreadgroup = 1024;
inline constexpr uint32_t kSimdWidth = 32;
// Every Apple GPU core has about 60 KB of threadgroup memory (Apple7 to
// Apple9; metal-benchmarks, 'On-Chip Memory') and saturates its ALUs at 24
// resident simdgroups (metal-benchmarks, 'ALU Bottlenecks'): the planner
// sizes threadgroup memory so that that many can be resident.
inline constexpr uint32_t kThreadgroupMemoryPerCore = 60 * 1024;
inline constexpr uint32_t kSaturationSimdgroupsPerCore = 24;
// 32-bit registers of fragment values one thread may keep live (q, o and
// score fragments; a 16-bit q fragment takes half a register per value);
// past this a kernel would spill to device memory on every step.
inline constexpr uint32_t kMaxFragmentRegistersPerThread = 512;
// 32-bit registers one thread has (Dougall Johnson, Apple G13 GPU
// Architecture Reference, 'Registers'; DESIGN.md section 14). Fragment
// values past this are spilled by the compiler: the kernel still runs, more
// slowly than the profile's model (which does not charge spills) predicts.
inline constexpr uint32_t kRegistersPerThread = 128;

// One [[buffer(n)]] of the kernel, as the manifest and the runtime see it.
struct BufferSlot {
  uint32_t index = 0;
  std::string name;      // q, k, v, out, lse, params, mask, alibi_slopes, sinks, ...
  std::string msl_type;  // "device const half*", "constant AttentionParams&"
  bool written = false;
  bool scratch = false;  // allocated by the runtime for one call (decode partials), not a user tensor
};

struct FunctionConstantSlot {
  uint32_t index = 0;
  std::string name;
  std::string type;
};

struct KernelPlan {
  spec::KernelSpec spec;
  std::string entry;            // the kernel function's name (= spec.name)
  std::string combine_entry;    // decode: the kernel merging the key splits (spec.name + "_combine"); else empty
  std::vector<std::string> entries;  // every kernel function of the file, in launch order
  uint32_t block_q = 0;         // query rows per threadgroup
  uint32_t block_k = 0;         // keys per step
  uint32_t simdgroups = 0;
  uint32_t threads = 0;         // per threadgroup: 32 * simdgroups
  uint32_t row_tiles = 0;       // 8-row query tiles per simdgroup
  uint32_t key_groups = 1;      // forward: simdgroup groups splitting each staged key block (same rows)
  uint32_t merge_tiles = 0;     // key_groups > 1: 8-column tiles of O handed to group 0 per merge pass
  uint32_t d_tiles = 0;         // ceil(D / 8)
  uint32_t dv_tiles = 0;        // ceil(Dv / 8)
  uint32_t chunk = 0;           // K/V columns staged in threadgroup memory per pass
  uint32_t staged_bytes = 0;    // bytes per staged element: the dtype's (quantized K/V: float32, dequantized)
  uint32_t d_passes = 0;        // passes over D per key block
  uint32_t dv_passes = 0;       // passes over Dv per key block
  uint32_t threadgroup_bytes = 0;  // static threadgroup memory of the kernel
  uint32_t fragment_registers = 0;  // 32-bit registers of live fragment values per thread
  bool tiles_from_table = false;
  uint32_t params_bytes = 0;       // sizeof the kernel's AttentionParams (its fields depend on the features)
  bool resident_tiles = false;     // two tiles: backward q and dO (K and V), q (K) staged once; forward K and V
  bool tensor_ops = false;         // products by mpp::tensor_ops::matmul2d (Metal 4), not simdgroup_matrix (uses_tensor_ops())
  std::vector<BufferSlot> buffers;
  std::vector<FunctionConstantSlot> function_constants;  // none yet: every spec field is baked in
};

// Buffer indices of the forward kernel (fixed, so apps bind by index).
inline constexpr uint32_t kQIndex = 0, kKIndex = 1, kVIndex = 2, kOutIndex = 3, kLseIndex = 4, kParamsIndex = 5,
                          kMaskIndex = 6, kAlibiIndex = 7;
// Decode kernels' scratch buffers: one partial out and lse per key split.
inline constexpr uint32_t kOutPartialIndex = 8, kLsePartialIndex = 9;
// Backward kernels: dO in, dQ, dK, dV out, and the scratch rows D = rowsum(dO * out).
inline constexpr uint32_t kDOutIndex = 10, kDqIndex = 11, kDkIndex = 12, kDvIndex = 13, kDRowsIndex = 14;
// Attention sinks (DESIGN.md section 13): one float32 logit per q head, and
// the backward's gradient of it.
inline constexpr uint32_t kSinksIndex = 15, kDSinksIndex = 16;
// Variable-length batches: where each packed sequence starts (B + 1 int32 each).
inline constexpr uint32_t kCuSeqlensQIndex = 17, kCuSeqlensKIndex = 18;
// Paged KV caches: the block table (B, max_pages) and the cache lengths (B,), int32.
inline constexpr uint32_t kBlockTableIndex = 19, kCacheSeqlensIndex = 20;
// cache_append kernels (cache_append_plan.h) write the caches bound where the
// attention reads k and v (kKIndex, kVIndex), through the same block table
// and lengths; the new rows come in at the decode partials' indices, which
// they never use, with their per-sequence row offsets at kCuSeqlensKIndex.
inline constexpr uint32_t kAppendNewKIndex = 8, kAppendNewVIndex = 9;
// Planned batches (packed queries on a paged cache, planned_batches()): the
// work and merge items of Library::plan_batch, at indices of backward
// buffers no paged kernel binds; the split rows' partials at the decode's.
inline constexpr uint32_t kWorkItemsIndex = 10, kMergeItemsIndex = 11;
// Backward kernels keep more fragments live (q, dO, dQ or k, v, dK, dV);
// past 256 head dims they spill, which costs speed, not correctness.
inline constexpr uint32_t kMaxBackwardFragmentRegistersPerThread = 1024;

// Plans one kernel. Throws spec::SpecError (the spec's file and JSON path)
// for requests the generator cannot honour: kinds not implemented yet,
// tiles over the threadgroup-memory, thread or register limits.
KernelPlan plan_kernel(const spec::KernelSpec& spec);

// The MSL type one unit of k and v is stored as: the element type, or for a
// quantized cache a 32-value block (block_q8_0, block_q4_0) or a byte (fp8).
// Strides of k and v count these units.
std::string kv_storage_type(const spec::KernelSpec& spec);

// True for the simdgroup_matrix forward with dense, unquantized K and V: the
// kernel that walks key blocks with row pointers and may give K and V a
// resident tile each (the other forwards stage through paged or
// dequantizing copies).
bool plain_forward_staging(const spec::KernelSpec& spec);

// True for the kernels that also run a planned batch (packed queries on a
// paged cache, simdgroup_matrix): a work item per threadgroup, split key
// ranges merged by a second entry, <name>_merge.
bool planned_batches(const spec::KernelSpec& spec);

// True for the kernels that may take tiles.key_groups > 1: the plain
// forward above without mask_mod (whose block classes skip whole staged
// blocks).
bool splits_key_blocks(const spec::KernelSpec& spec);

// The tile table (tile_table.json, plan/tile_table.h): the tiles of the
// first row that serves the kernel (its kind, widest head dim, and for some
// rows its element type, target family or causal mode), when the spec gives
// none.
spec::Tiles table_tiles(const spec::KernelSpec& kernel);

}  // namespace mfagen::plan
