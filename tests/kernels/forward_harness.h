// Runs one generated forward kernel on the cpu backend, exactly as emitted
// (plan -> render -> compile -> dispatch -> launch with every detector on),
// and judges it against the independent float64 reference (reference/)
// with the tolerance rule of DESIGN.md section 3.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <utility>
#include <map>
#include <span>
#include <vector>
#include <optional>
#include <ostream>
#include <string>

#include "attention_problem.h"
#include "score_functions_harness.h"
#include "mfagen/cpu/backend.h"
#include "mfagen/cpu/execute_dispatch.h"
#include "plan/kernel_plan.h"
#include "spec/kernel_spec.h"
#include "tolerance.h"

namespace mfagen::test {

struct ForwardCase {
  spec::DType dtype = spec::DType::float16;
  uint32_t head_dim = 64;
  uint32_t head_dim_v = 0;  // 0: head_dim
  spec::Causal causal = spec::Causal::none;
  bool gqa = true;
  bool lse = true;
  std::optional<spec::Tiles> tiles;
  spec::Target target = spec::Target::apple9;
  uint64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 16, seq_k = 16;
  double scale = 0;          // 0: default 1/sqrt(D)
  // Features (DESIGN.md section 3); the kernel is generated with exactly these.
  enum class MaskFill { random, all_visible, all_hidden };
  spec::MaskKind mask = spec::MaskKind::none;
  std::array<uint64_t, 4> mask_extents{};  // per dim 1 (broadcast) or 0 (the full size)
  MaskFill mask_fill = MaskFill::random;   // random: ~30% hidden keys and every 5th row fully hidden
  std::optional<std::pair<int64_t, int64_t>> window;  // (left, right), -1 unbounded
  double softcap = 0;
  bool alibi = false;
  bool alibi_per_batch = false;
  bool sinks = false;                     // one sink logit per q head (some -inf: heads without a sink)
  // Layout varlen: the lengths of the packed sequences (batch = their count;
  // seq_q and seq_k are ignored). Empty: dense tensors.
  std::vector<uint32_t> varlen_q, varlen_k;
  // varlen: the device's cu_seqlens decrease, go negative and run past the
  // packed tensors (the host would refuse them); only the absence of
  // detector findings (no access out of bounds) is judged.
  bool corrupt_cu_seqlens = false;
  // kv_cache paged when page_size > 0: k and v in pages of page_size keys, in
  // shuffled order, with spare pages no sequence uses; cache_lengths gives
  // each sequence's keys (batch = their count; seq_k is ignored). With
  // varlen_q too, the queries are packed (varlen_k is not read): a serving
  // step's prefill chunks and decodes against the cache in one launch.
  // share_pages: sequence 1 reads sequence 0's first page (a shared prefix).
  uint32_t page_size = 0;
  std::vector<uint32_t> cache_lengths;
  bool share_pages = false;
  // Packed queries on a paged cache: > 0 runs a planned batch (Library::plan_batch
  // with this many threadgroups, few enough to split long key ranges); 0 the grid.
  uint32_t plan_threadgroups = 0;
  // mask_mod kernels: compute the block classes first in a call of their own
  // (BlockClasses::only) and hand them to the forward (BlockClasses::given),
  // as a reused BlockMask is; the forward's results must not change.
  bool reuse_block_classes = false;
  // Quantized k and v (q8_0, q4_0, fp8_e4m3): normal values stored in the
  // format; the reference dequantizes the stored rows (dense and paged cases).
  spec::KvDType kv_dtype = spec::KvDType::as_dtype;
  // Dropout (spec dropout): the kernel is generated with it when set.
  std::optional<reference::DropoutOptions> dropout;
  // score_mod / mask_mod (DESIGN.md section 13): the spec's expressions, their
  // inputs, and the plain functions the reference applies. Dense cases only.
  std::shared_ptr<const ScoreFunctionCase> mods;
  // Applied to the reference problem last: a case whose expressions spell a
  // built-in feature is judged by the built-in feature's reference.
  std::function<void(reference::AttentionProblem&)> adjust_reference;
  spec::Kind kind = spec::Kind::forward;  // decode: split-K kernels (seq_q <= 16); backward: dq, dk, dv
                                          // after the forward kernel of the same features
  uint32_t splits = 0;                    // decode: 0 = chosen from the shape
  double q_scale = 1, kv_scale = 1;       // standard deviations of the random q and of k, v
  // Backward cases whose forward is only the means (large logits in float32,
  // where the naive float32 forward itself exceeds DESIGN.md's atol): judge
  // the gradients only.
  bool judge_forward = true;
  bool bshd = false;         // lay q, k, v, out out as (B, S, H, D) through strides
  uint32_t tensor_layout_seed = 0;  // TensorOps kernels: permute cooperative-tensor layouts (0: default)
  uint64_t seed = 1;
  std::string describe() const;
};

struct ForwardOutcome {
  reference::ToleranceVerdict out;
  reference::ToleranceVerdict lse;  // ok when the kernel has no lse
  bool judge_forward = true;
  cpu::DispatchResult dispatch;
  cpu::DispatchResult backward;                    // backward cases: the three backward launches
  std::vector<reference::ToleranceVerdict> gradients;  // backward cases: dq, dk, dv, and d_sinks with sinks
  std::vector<std::vector<float>> gradient_values;     // backward cases: dq, dk, dv (, d_sinks) as written
  uint32_t splits = 0;             // decode: the key splits the dispatch used; planned batch: blocks split
  std::vector<float> out_values;   // (B, Hq, Sq, Dv) as the kernel wrote them
  std::vector<float> lse_values;   // (B, Hq, Sq)
  std::string kernel_source;
  bool ok() const {
    bool grads = backward.clean();
    for (const reference::ToleranceVerdict& g : gradients) grads = grads && g.ok;
    return (out.ok || !judge_forward) && lse.ok && dispatch.clean() && grads;
  }
  std::string report() const;  // verdicts and findings, for test failure messages
};

// gtest prints parameters with this instead of their bytes.
inline void PrintTo(const ForwardCase& c, std::ostream* os) { *os << c.describe(); }

// A forward case of this kernel and shape for `target`; every other field
// keeps its default.
ForwardCase forward_case(spec::DType dtype, uint32_t head_dim, uint32_t head_dim_v, spec::Causal causal,
                         uint64_t seq_q, uint64_t seq_k, spec::Target target = spec::Target::apple9);
// The cases every forward tier runs (forward_kernel_test, tensor_ops_kernel_test):
// each dtype x causal mode at D 64 with batch 2, GQA 4/2 and Sq != Sk both
// ways; BSHD strides (float16, then float32 with scale 0.3); no lse and no GQA.
std::vector<ForwardCase> common_forward_cases(spec::Target target);

spec::KernelSpec make_spec(const ForwardCase& c);
// The sink logits of a case with sinks, one per q head: around the size of a
// row's lse, so that the sink takes a real share of the softmax, and -inf
// (no sink) for some heads.
std::vector<double> case_sinks(const ForwardCase& c);
// ALiBi slopes of a case: (Hq,) or (B, Hq) with alibi_per_batch.
std::vector<double> case_alibi_slopes(const ForwardCase& c);

// The kernel a case runs first (a backward case: the forward of the same
// features), planned, rendered and compiled for the cpu backend.
struct CaseKernel {
  plan::KernelPlan plan;
  std::string source;
  std::shared_ptr<const cpu::Module> module;
};
CaseKernel compile_forward_kernel(const ForwardCase& c);

// A case's score_mod / mask_mod inputs (runtime scalars, captured tensors),
// kept for a run: bind() points the kernel's buffers at them.
struct CaseModInputs {
  std::vector<float> scalars;
  std::vector<std::vector<std::byte>> captures;
  void bind(std::map<uint32_t, std::span<std::byte>>& tensors);
};
CaseModInputs case_mod_inputs(const ForwardCase& c);

// What every reference problem of a case shares: heads, head dims, causal
// mode, scale, window and softcap (no shapes, tensors, masks or slopes).
reference::AttentionProblem case_options(const ForwardCase& c, uint32_t head_dim, uint32_t head_dim_v);
ForwardOutcome run_forward_case(const ForwardCase& c);

}  // namespace mfagen::test
