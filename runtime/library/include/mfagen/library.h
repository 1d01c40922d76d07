// The runtime library apps link (DESIGN.md section 8): load the manifest of
// the kernels an app vendored, pick one per call by shape, plan its dispatch.
// No generator, clang or JSON on the hot path: Library::load parses and
// validates the manifest once into an immutable selection table (a hash index
// on the exact-match facts); find()/select() and launch_plan() allocate
// nothing and take no locks, so any number of threads may call them
// concurrently. plan() returns the same plan as a heap-allocated DispatchPlan.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mfagen/device_capabilities.h"
#include "mfagen/forward_dispatch.h"
#include "mfagen/launch_plan.h"

namespace mfagen {

enum class ElementType : uint8_t { float16, bfloat16, float32 };
// cache_append: not attention (never selected for a call); it writes new k
// and v into the cache the attention reads (mfagen/cache_append_dispatch.h).
enum class KernelKind : uint8_t { forward, decode, backward, cache_append };
enum class CausalMode : uint8_t { none, top_left, bottom_right };

// A Metal function constant a kernel declares (manifest "function_constants").
// Generated kernels declare none today (every spec field is compiled in). A
// constant's value comes from the manifest's optional "value"; without one
// the Metal backend leaves it undefined (is_function_constant_defined() is
// false in the kernel). The Metal backend keys pipelines by entry + values.
struct FunctionConstant {
  uint32_t index = 0;
  std::string name;
  std::string type;                  // MSL scalar type: bool, char, uchar, short, ushort, int, uint, half, float
  bool has_value = false;
  std::array<std::byte, 4> value{};  // the value in `type`'s representation (value_bytes of them)
  uint32_t value_bytes = 0;
};

// One kernel of the manifest: what selection compares and what dispatch needs.
struct KernelEntry {
  std::string name;
  std::string file;  // relative to the manifest's directory
  std::string hash;
  std::vector<std::string> entries;  // every kernel function of the file, in launch order
  std::vector<FunctionConstant> function_constants;
  KernelKind kind = KernelKind::forward;
  ElementType dtype = ElementType::float16;
  CausalMode causal = CausalMode::none;
  ForwardKernelInfo info;  // head dims, tiles, features, entry points
  uint32_t params_bytes = 0;
  // What the kernel needs of the device (manifest "requires"): selection
  // serves a call with it only on devices whose capabilities satisfy it.
  KernelRequirements requirements;
};

// What a call needs: the selection key. Features absent from the call must be
// absent from the kernel (a kernel with a window or mask expects its inputs).
struct AttentionQuery {
  KernelKind kind = KernelKind::forward;  // forward calls may be served by decode kernels
  ElementType dtype = ElementType::float16;
  uint32_t head_dim = 0, head_dim_v = 0;
  CausalMode causal = CausalMode::none;
  MaskInput mask = MaskInput::none;
  bool window = false, softcap = false, alibi = false, sinks = false;
  bool varlen = false;  // packed sequences (shape.seq_q, seq_k: the longest)
  bool paged = false;   // k, v in a paged cache (shape.seq_k: the longest cache length)
  KvFormat kv_format = KvFormat::elements;  // how k and v are stored (quantized caches)
  bool dropout = false;  // Philox dropout (training)
  // score_mod / mask_mod: the id of the kernel's expressions (its manifest
  // "mods.id", ForwardKernelInfo::mods_id); 0 for calls without them. Only a
  // kernel compiled from exactly these expressions fits.
  uint64_t mods_id = 0;
  bool need_lse = false;
  AttentionShape shape;
};

// Why Library::find() found no kernel: the first fact of the selection rule
// (below) that no kernel of the library meets, in the rule's order. The
// call trace (mfagen/call_trace.h) counts misses by it.
enum class MissReason : uint8_t {
  dtype_or_head_dims,     // no kernel has this dtype, D and Dv
  no_backward_kernel,     // backward query: only forward/decode kernels have this dtype, D and Dv
  only_backward_kernels,  // forward query: only backward kernels have this dtype, D and Dv
  causal_mode,            // kernels of this kind, dtype and head dims, none with this causal mode
  features,               // ... and causal mode, none with this mask kind, window, softcap, alibi, sinks,
                          // layout, kv cache, kv dtype and dropout
  decode_only,            // every fitting kernel is a decode kernel and seq_q > 16
  needs_gqa,              // every fitting kernel lacks gqa and heads_q != heads_kv
  needs_lse,              // every fitting kernel lacks lse and the call needs it
  device_capabilities,    // every fitting kernel requires what the device lacks (TensorOps, GPU family, Metal version)
};

class SelectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Library {
 public:
  // Reads manifest.json; kernel files are resolved against its directory.
  static Library load(const std::filesystem::path& manifest);
  // Parses manifest text; `directory` is where its kernel files live.
  static Library load_from_memory(std::string_view manifest_json, std::filesystem::path directory = {});

  const std::vector<KernelEntry>& kernels() const { return kernels_; }
  const std::filesystem::path& directory() const { return directory_; }

  // The most specific kernel for the query that the device can run (rule
  // below), or nullptr. No allocation, no locks: a hash lookup on the
  // exact-match facts, then the first fitting kernel of a list sorted by the
  // preference below (so the cost does not grow with the number of kernels).
  // Rule: every compile-time fact must match (dtype, head dims, causal mode,
  // mask kind, window, softcap, alibi, sinks, layout, kv cache,
  // score_mod/mask_mod id; gqa unless heads_q == heads_kv; lse when needed;
  // decode kernels only for seq_q <= 16; backward only for backward queries)
  // and `device` must satisfy the kernel's requirements (Metal version, GPU
  // family, TensorOps). Among the matches: a decode kernel for seq_q <= 16,
  // then a kernel without gqa when heads_q == heads_kv, then one without lse
  // when the call does not need it, then a TensorOps kernel; ties go to
  // manifest order. So a spec generated for ["apple10", "apple9"] gives its
  // TensorOps kernel to devices that support TensorOps and falls back to the
  // simdgroup_matrix kernel on the others, in the same call.
  // With the call trace on (mfagen/call_trace.h) a miss is counted with its
  // MissReason, still without allocation or locks.
  const KernelEntry* find(const AttentionQuery& query, const DeviceCapabilities& device) const noexcept;
  // find(), or SelectionError saying what was asked and which kernels are
  // closest; when kernels fit but need more than `device` offers, it names
  // them, what they require and what the device lacks.
  const KernelEntry& select(const AttentionQuery& query, const DeviceCapabilities& device) const;
  // For a device with the baseline capabilities (DeviceCapabilities{}: Metal
  // 3.1, Apple7, no TensorOps): never a TensorOps kernel. Pass
  // backend.capabilities() to let TensorOps kernels serve the call.
  const KernelEntry* find(const AttentionQuery& query) const noexcept { return find(query, DeviceCapabilities{}); }
  const KernelEntry& select(const AttentionQuery& query) const { return select(query, DeviceCapabilities{}); }

  // The dispatch plan of `kernel` for one call (runtime/dispatch).
  static DispatchPlan plan(const KernelEntry& kernel, const ForwardCall& call) {
    return plan_forward(kernel.info, call);
  }
  // A serving step's work split for a kernel with planned_batches (packed
  // queries on a paged cache), into `plan`, from the host's cu_seqlens_q
  // (B + 1) and cache_seqlens (B) and the call's shape, window and totals:
  // each (sequence, query block) one work item, its keys split when longer
  // than its share of about `threadgroups` threadgroups (per q head) so that
  // one long sequence does not bound the launch; a decode (a sequence whose
  // queries times the GQA group fit one query block) takes the group's (q
  // head, query) pairs as rows, its threadgroups slicing its keys per kv
  // head (BatchWork::slices); split blocks and slices are merged by
  // the kernel's _merge launch in split order (bit-identical run to run).
  // Plan once per step and pass it (ForwardCall::batch_plan) to every
  // layer's call; `plan` keeps its vectors' capacity, and the checks of the
  // lengths build a message only when they fail (about 2 us and one
  // allocation, the stable sort's buffer, for 64 sequences here:
  // tests/runtime/runtime_bench); launch_plan with the plan allocates
  // nothing. Throws DispatchError naming a bad input.
  static void plan_batch(const KernelEntry& kernel, const ForwardCall& call, std::span<const int32_t> cu_seqlens_q,
                         std::span<const int32_t> cache_seqlens, BatchPlan& plan, uint32_t threadgroups = 2048);
  // Threads per threadgroup of each of the kernel's launches, in launch
  // order (they do not depend on the call's shape): what a backend builds
  // pipelines for ahead of a call. Any kind and layout, cache writes too.
  static std::vector<uint32_t> launch_threads(const KernelEntry& kernel);
  // The same plan in fixed storage, for the hot path: no allocation, no
  // locks. A call the kernel cannot run throws the DispatchError plan()
  // throws (that path allocates). `kernel` must belong to a loaded Library.
  static LaunchPlan launch_plan(const KernelEntry& kernel, const ForwardCall& call);
  // launch_plan() into caller storage; returns the same reference.
  static LaunchPlan& launch_plan(const KernelEntry& kernel, const ForwardCall& call, LaunchPlan& out);

 private:
  // Open-addressing hash table from the packed exact-match key of a kernel
  // to its candidates (indices into kernels_, most preferred first).
  struct Slot {
    uint64_t key = 0;
    uint32_t begin = 0, count = 0;  // count == 0: empty slot
  };
  // A kernel of a slot with the restrictions left to check per call.
  struct Candidate {
    uint32_t kernel = 0;                                 // index into kernels_
    bool decode = false, no_gqa = false, no_lse = false;  // seq_q <= 16; heads_q == heads_kv; lse not needed
    KernelRequirements requirements;                      // the device must satisfy them
    uint64_t mods_id = 0;                                 // must equal the query's
  };
  void build_index();
  const Slot* slot_for(uint64_t key) const noexcept;  // nullptr: no kernel has this exact key
  const KernelEntry* find_in_index(const AttentionQuery& query, const DeviceCapabilities& device) const noexcept;
  // For a query find_in_index() misses on `device`.
  MissReason miss_reason(const AttentionQuery& query, const DeviceCapabilities& device) const noexcept;

  std::vector<KernelEntry> kernels_;
  std::filesystem::path directory_;
  std::vector<Slot> slots_;             // power-of-two size, at most half full
  std::vector<Candidate> candidates_;
  uint32_t slot_shift_ = 64;
  // The kernels' exact keys with facts masked off, tagged by which facts are
  // left, sorted: how far a missed query got (miss_reason) in O(log n).
  std::vector<uint64_t> partial_keys_;
};

std::string_view to_string(ElementType);
std::string_view to_string(KernelKind);
std::string_view to_string(CausalMode);
std::string_view to_string(MissReason);

}  // namespace mfagen
