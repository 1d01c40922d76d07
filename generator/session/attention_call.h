// One attention call over tensors in host memory (DESIGN.md sections 3, 10,
// 13 and 16): the orchestration `mfagen run` and the Python bindings share.
// The call's tensors decide the layout's shapes, the set's selection rule
// picks the kernel, then the forward runs and, given dO, the backward (out
// and lse from the forward of the same features, or from an earlier forward
// when the caller passes them, as autograd does). Nothing here reads or
// writes files: the front ends do.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mfagen/backend.h"
#include "session/call_layout.h"
#include "session/host_tensor.h"
#include "session/packed_sequences.h"
#include "session/paged_cache_inputs.h"
#include "session/quantized_cache_inputs.h"
#include "session/spec_library.h"

namespace mfagen::session {

// The kernels a call may use: a spec set, how errors name it, and where the
// forward kernel of a backward spec comes from (the Metal backend reads
// kernel files, so the CLI writes it to a directory; bindings keep it in
// memory). Called only for backward calls that do not pass out and lse.
struct KernelSet {
  const SpecLibrary& set;
  std::string name;
  std::function<const SpecLibrary&(const plan::KernelPlan& backward)> forward_of;
};

// Runtime values of the call (DESIGN.md section 3). Absent: the kernel's
// default, and a kernel with the feature is not required.
struct AttentionOptions {
  std::optional<double> scale;  // > 0; default 1/sqrt(D)
  std::optional<double> softcap;
  std::optional<int64_t> window_left, window_right;  // -1: unbounded
  std::optional<double> dropout;                     // p in [0, 1)
  uint64_t seed = 0;
  uint32_t offset = 0;
  std::optional<double> k_scale, v_scale;  // fp8_e4m3 caches
  // Narrow the selection (a call does not otherwise state them).
  std::optional<spec::DType> dtype;
  std::optional<spec::Causal> causal;
};

// score_mod / mask_mod inputs, in the kernel's declaration order.
struct ScoreFunctionInputs {
  std::vector<std::vector<std::byte>> captures;
  std::vector<float> scalars;
};

struct AttentionInputs {
  TensorLayout layout = TensorLayout::dense;
  // dense: (B, Hq, Sq, D), (B, Hkv, Sk, D), (B, Hkv, Sk, Dv); packed: (T, H, D);
  // paged: k and v (num_pages, page_size, Hkv, D). Any float dtype: read in
  // place when it is the kernel's, else rounded to it.
  HostTensor q, k, v;
  // Quantized k and v: their stored rows (in `kv_format`) instead of k and v's data.
  std::optional<QuantizedCache> k_cache, v_cache;
  KvFormat kv_format = KvFormat::elements;
  std::optional<HostTensor> mask;          // bool or float, 2 to 4 dims broadcastable to (B, Hq, Sq, Sk)
  std::optional<HostTensor> alibi_slopes;  // (Hq,) or (B, Hq)
  std::optional<std::vector<float>> sinks; // (Hq,)
  std::optional<PackedSequences> sequences;  // layout packed
  std::optional<PagedCacheInputs> cache;     // layout paged
  // Given: only score_mod / mask_mod kernels serve the call, and this gives
  // their inputs once the kernel (and so what it reads) is known.
  std::function<ScoreFunctionInputs(const spec::KernelSpec&, const AttentionShape&)> score_functions;
  // mask_mod kernels (a reusable BlockMask): `only` computes the block
  // classes alone (AttentionResult::block_classes; nothing else runs);
  // `given` passes classes an `only` call of the same kernel, shape and
  // captured inputs computed (their size is checked against this call's).
  BlockClasses block_classes_mode = BlockClasses::computed;
  std::span<const std::byte> block_classes;
  std::optional<HostTensor> d_out;  // the shape of out: run the backward too
  // With d_out: out and lse of an earlier forward of this call (autograd);
  // then only the backward kernels run.
  std::optional<HostTensor> out, lse;
};

// A result in the kernel's encoding: C-contiguous unless `strides` say
// otherwise (gradients take the strides of the inputs read in place).
struct OutputTensor {
  HostDType dtype = HostDType::float32;
  std::vector<uint64_t> shape;
  std::vector<int64_t> strides;  // elements; empty: C-contiguous
  std::vector<std::byte> bytes;
};

struct CaptureGradient {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;
};

struct AttentionResult {
  const plan::KernelPlan* plan = nullptr;  // the selected kernel's (forward or backward); owned by the set
  AttentionShape shape;
  bool has_lse = false;           // lse is filled (the kernel writes it)
  bool ran_forward = false;
  OutputTensor out, lse;          // out: the forward's, unless out was given
  std::optional<OutputTensor> dq, dk, dv;
  std::vector<float> d_sinks;     // (Hq,) for sinks kernels' backward
  std::vector<CaptureGradient> capture_gradients;
  std::vector<std::byte> block_classes;  // BlockClasses::only calls: the classes, for later `given` calls
  RunStats stats;
};

// Runs the call on `backend`. Throws CallError naming the argument and what
// was expected (shapes that disagree, a dtype a kernel cannot take, no
// kernel in the set for the call) before any kernel runs.
AttentionResult run_attention(const KernelSet& kernels, const AttentionInputs& inputs, const AttentionOptions& options,
                              Backend& backend);

// A dense forward call prepared once for its tensors' layouts (DESIGN.md
// section 16): the Python package keys a call by its tensors' shapes,
// strides and dtypes and its flags, and a later call with the same key only
// binds its tensors' data and runs. What depends on the layouts alone is
// done here, once: the checks, the kernel's selection, the runtime values
// and the dispatch plan. Only a forward of dense q, k and v that the kernel
// reads in place, with at most a mask, can be prepared (an additive mask's
// values are still checked per call, as run_attention checks them).
struct PreparedForward {
  const SpecLibrary* set = nullptr;  // the set the call selected from; it must outlive this
  const KernelEntry* entry = nullptr;
  const plan::KernelPlan* plan = nullptr;
  AttentionShape shape;
  uint64_t q_bytes = 0, k_bytes = 0, v_bytes = 0;  // the spans read from each call's q, k and v
  std::optional<HostTensor> mask;                  // the mask's layout (its data is each call's)
  std::array<uint64_t, 4> mask_strides{};
  DispatchPlan dispatch;
  std::vector<uint64_t> out_shape;  // (B, Hq, Sq, Dv), C-contiguous in the kernel's dtype
  uint64_t out_bytes = 0;
  uint64_t lse_bytes = 0;  // 0: the kernel writes no lse
};

// The call prepared, or nullopt when it needs per-call work beyond binding
// its tensors (packed or paged layouts, quantized caches, ALiBi, sinks,
// score functions, dropout, a backward, or an input the kernel cannot read
// in place: a converted copy). Throws what run_attention throws for the
// call, before any kernel runs.
std::optional<PreparedForward> prepare_forward(const KernelSet& kernels, const AttentionInputs& inputs,
                                               const AttentionOptions& options, const Backend& backend);

// One call's data for a prepared forward: q, k, v (and the mask) laid out as
// they were when it was prepared; out and lse at least out_bytes and
// lse_bytes long (lse may be empty when lse_bytes is 0).
struct ForwardData {
  const std::byte *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  std::span<std::byte> out, lse;
};

// Runs the launches run_attention runs for the call, writing out and lse.
// Throws CallError when an additive mask holds NaN or +inf (as run_attention).
RunStats run_prepared_forward(const PreparedForward& call, const ForwardData& data, Backend& backend);

}  // namespace mfagen::session
