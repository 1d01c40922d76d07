#include "forward_harness.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <span>
#include <vector>

#include "attention_backward_reference.h"
#include "device_tensor.h"
#include "serving_harness.h"
#include "quantized_kv_harness.h"
#include "attention_reference.h"
#include "gradient_tolerance.h"
#include "mfagen/forward_dispatch.h"
#include "plan/kernel_plan.h"
#include "random_inputs.h"
#include "render/render_forward.h"
#include "selftest/case_inputs.h"
#include "spec/canonical.h"
#include "plan/dispatch_info.h"

namespace mfagen::test {
namespace {

// (B, S, H, D) in memory: strides of the BHSD view.
Strides3 bshd_strides(uint64_t heads, uint64_t seq, uint64_t d) { return {seq * heads * d, d, heads * d}; }

// The mask of a case: its extents (1 or full) and values. Hidden keys are
// false (bool) or -inf (additive); visible additive values are small reals.
struct MaskData {
  std::array<uint64_t, 4> extents{};
  std::vector<uint8_t> visible;     // per mask element
  std::vector<double> additive;     // per mask element, rounded to the dtype
};

MaskData make_mask(const ForwardCase& c, reference::ElementType type) {
  MaskData m;
  const std::array<uint64_t, 4> full = {c.batch, c.heads_q, c.seq_q, c.seq_k};
  uint64_t n = 1;
  for (int d = 0; d < 4; ++d) n *= (m.extents[d] = c.mask_extents[d] == 1 ? 1 : full[d]);
  const std::vector<double> noise = reference::random_tensor(n, c.seed * 7 + 5, reference::ElementType::float32);
  const std::vector<double> values = reference::random_tensor(n, c.seed * 7 + 6, type, 2.0);
  m.visible.resize(n);
  m.additive.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t row = (i / m.extents[3]) % m.extents[2];
    bool visible = true;
    if (c.mask_fill == ForwardCase::MaskFill::all_hidden) visible = false;
    if (c.mask_fill == ForwardCase::MaskFill::random) visible = noise[i] > -0.5 && row % 5 != 3;
    m.visible[i] = visible;
    m.additive[i] = visible ? values[i] : -INFINITY;
  }
  return m;
}

}  // namespace

std::vector<double> case_alibi_slopes(const ForwardCase& c) {
  std::vector<double> slopes(c.alibi_per_batch ? c.batch * c.heads_q : c.heads_q);
  for (size_t i = 0; i < slopes.size(); ++i)
    slopes[i] = double(float(std::exp2(-8.0 * double(i % c.heads_q + 1) / double(c.heads_q)) * (1 + i / c.heads_q)));
  return slopes;
}


std::vector<double> case_sinks(const ForwardCase& c) {
  static constexpr double kLogits[] = {1.5, -0.75, 3.25, -INFINITY, 0.5, 4.0, -2.0, 2.25};
  std::vector<double> sinks(c.heads_q);
  for (uint64_t h = 0; h < c.heads_q; ++h) sinks[h] = kLogits[(h + c.seed) % 8];
  return sinks;
}

namespace {

// A captured tensor's gradient against central differences of the float64
// reference's loss sum(dO . out) in each of its elements (the reference reads
// the case's shared table, which they perturb and restore). The bound is
// relative to the gradient's largest element: the sums run over many pairs.
reference::ToleranceVerdict check_capture_gradient(const ForwardCase& c, const reference::AttentionProblem& problem,
                                                   const std::vector<double>& d_out, size_t capture,
                                                   const std::vector<float>& got, reference::ElementType type) {
  const std::shared_ptr<std::vector<float>>& table = c.mods->float_tables.at(capture);
  const std::string name = "d_" + c.mods->functions.captures[capture].name;
  if (!table || table->size() != got.size())
    return {false, 0, 0, 0, name + ": the case has no table of its size to differentiate"};
  const std::vector<double> want = reference::table_gradient_by_central_differences(problem, d_out, *table);
  double largest = 0;
  for (double g : want) largest = std::max(largest, std::fabs(g));
  const double bound = (type == reference::ElementType::float32 ? 2e-4 : 2e-2) * largest + 1e-4;
  double worst = 0;
  size_t at = 0;
  for (size_t e = 0; e < got.size(); ++e)
    if (std::fabs(double(got[e]) - want[e]) > worst) worst = std::fabs(double(got[e]) - want[e]), at = e;
  const bool ok = worst <= bound;
  return {ok, worst, 0, bound,
          fmt::format("{} {}: max error {:.3g} at element {} (kernel {}, central differences {}), bound {:.3g}", name,
                      ok ? "ok" : "FAILED", worst, at, got[at], want[at], bound)};
}

}  // namespace

std::string ForwardCase::describe() const {
  std::string d = fmt::format("{} D={} Dv={} causal={} gqa={} lse={} Hq={} Hkv={}", spec::to_string(dtype), head_dim,
                              head_dim_v ? head_dim_v : head_dim, spec::to_string(causal), gqa, lse, heads_q, heads_kv);
  if (varlen_q.empty() && !page_size) d += fmt::format(" B={} Sq={} Sk={}", batch, seq_q, seq_k);
  if (page_size && varlen_q.empty()) d += " Sq=" + std::to_string(seq_q);
  if (bshd) d += " BSHD";
  if (tiles) d += fmt::format(" tiles {}/{}/{}", tiles->block_q, tiles->block_k, tiles->simdgroups);
  if (tiles && tiles->key_groups > 1) d += fmt::format(" key_groups {}", tiles->key_groups);
  if (target != spec::Target::apple9) d += fmt::format(" {}", spec::to_string(target));
  if (tensor_layout_seed) d += fmt::format(" layout-seed {}", tensor_layout_seed);
  if (scale > 0) d += fmt::format(" scale={}", scale);
  if (mask != spec::MaskKind::none)
    d += fmt::format(" mask={} extents=({},{},{},{}) fill={}", spec::to_string(mask), mask_extents[0], mask_extents[1],
                     mask_extents[2], mask_extents[3], int(mask_fill));
  if (window) d += fmt::format(" window=({},{})", window->first, window->second);
  if (softcap > 0) d += fmt::format(" softcap={}", softcap);
  if (alibi) d += alibi_per_batch ? " alibi=(B,Hq)" : " alibi=(Hq)";
  if (sinks) d += " sinks";
  if (spec::kv_quantized(kv_dtype)) d += fmt::format(" kv {}", spec::to_string(kv_dtype));
  if (dropout) d += fmt::format(" dropout p={} seed={:#x} offset={}", dropout->p, dropout->seed, dropout->offset);
  if (mods) d += " mods " + mods->recipe;
  if (page_size) {
    d += fmt::format(" paged page_size={} cache lengths", page_size);
    for (uint32_t n : cache_lengths) d += fmt::format(" {}", n);
    if (share_pages) d += " shared";
  }
  if (!varlen_q.empty() && page_size) {
    d += " varlen q lengths";
    for (uint32_t n : varlen_q) d += fmt::format(" {}", n);
  } else if (!varlen_q.empty()) {
    d += " varlen q/k lengths";
    for (size_t b = 0; b < varlen_q.size(); ++b) d += fmt::format(" {}/{}", varlen_q[b], varlen_k[b]);
  }
  if (kind == spec::Kind::decode) d += fmt::format(" decode splits={}", splits ? std::to_string(splits) : "auto");
  if (kind == spec::Kind::backward) d += " backward";
  if (q_scale != 1 || kv_scale != 1) d += fmt::format(" q x{} kv x{}", q_scale, kv_scale);
  return d;
}

std::string ForwardOutcome::report() const {
  std::string r = fmt::format("out: {} (max error {:.3g}, naive {:.3g}, bound {:.3g}) {}\nlse: {} {}\n",
                              out.ok ? "ok" : "FAIL", out.max_abs_error, out.naive_error, out.bound, out.detail,
                              lse.ok ? "ok" : "FAIL", lse.detail);
  for (const reference::ToleranceVerdict& g : gradients)
    r += fmt::format("{} (max error {:.3g}, naive {:.3g}, bound {:.3g}) {}\n", g.ok ? "ok" : "FAIL", g.max_abs_error,
                     g.naive_error, g.bound, g.detail);
  for (const cpu::DispatchResult* d : {&dispatch, &backward})
    for (const cpu::LaunchResult& l : d->launches)
      for (const cpu::Finding& f : l.findings) r += f.to_string() + "\n";
  return r;
}

ForwardCase forward_case(spec::DType dtype, uint32_t head_dim, uint32_t head_dim_v, spec::Causal causal,
                         uint64_t seq_q, uint64_t seq_k, spec::Target target) {
  ForwardCase c;
  c.target = target;
  c.dtype = dtype;
  c.head_dim = head_dim;
  c.head_dim_v = head_dim_v;
  c.causal = causal;
  c.seq_q = seq_q;
  c.seq_k = seq_k;
  return c;
}

std::vector<ForwardCase> common_forward_cases(spec::Target target) {
  using spec::Causal;
  using spec::DType;
  std::vector<ForwardCase> cases;
  for (DType t : {DType::float16, DType::bfloat16, DType::float32})
    for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (auto [sq, sk] : {std::pair<uint64_t, uint64_t>{17, 128}, {128, 17}}) {
        ForwardCase f = forward_case(t, 64, 0, c, sq, sk, target);
        f.batch = 2;
        f.heads_q = 4;
        f.heads_kv = 2;
        cases.push_back(f);
      }
  ForwardCase f = forward_case(DType::float16, 64, 0, Causal::top_left, 33, 33, target);
  f.batch = 2;
  f.heads_q = 4;
  f.heads_kv = 2;
  f.bshd = true;
  cases.push_back(f);
  f.dtype = DType::float32;
  f.scale = 0.3;
  cases.push_back(f);
  f = forward_case(DType::bfloat16, 96, 0, Causal::none, 30, 30, target);
  f.lse = false;
  f.gqa = false;
  f.heads_q = f.heads_kv = 2;
  cases.push_back(f);
  return cases;
}

spec::KernelSpec make_spec(const ForwardCase& c) {
  spec::KernelSpec s;
  s.dtype = c.dtype;
  s.head_dim = c.head_dim;
  s.head_dim_v = c.head_dim_v ? c.head_dim_v : c.head_dim;
  s.causal = c.causal;
  s.gqa = c.gqa;
  s.lse = c.lse;
  s.tiles = c.tiles;
  s.target = c.target;
  s.mask = c.mask;
  s.window = c.window.has_value();
  s.softcap = c.softcap > 0;
  s.alibi = c.alibi;
  s.sinks = c.sinks;
  s.layout = c.varlen_q.empty() ? spec::Layout::dense : spec::Layout::varlen;
  s.kv_cache = c.page_size ? spec::KvCache::paged : spec::KvCache::dense;
  s.kv_dtype = c.kv_dtype;
  s.dropout = c.dropout.has_value();
  if (c.mods) s.mods = c.mods->functions;
  s.kind = c.kind;
  s.name = spec::derived_name(s);
  s.origin = {"test", ""};
  return s;
}

CaseModInputs case_mod_inputs(const ForwardCase& c) {
  CaseModInputs m;
  if (c.mods) {
    m.scalars = c.mods->scalars;
    m.captures = c.mods->captures;
  }
  return m;
}

void CaseModInputs::bind(std::map<uint32_t, std::span<std::byte>>& tensors) {
  if (!scalars.empty()) tensors[kForwardModScalars] = std::as_writable_bytes(std::span(scalars));
  for (size_t i = 0; i < captures.size(); ++i) tensors[kForwardFirstCapture + uint32_t(i)] = captures[i];
}

CaseKernel compile_forward_kernel(const ForwardCase& c) {
  ForwardCase forward_case = c;
  if (c.kind == spec::Kind::backward) forward_case.kind = spec::Kind::forward;
  CaseKernel kernel{plan::plan_kernel(make_spec(forward_case)), "", nullptr};
  kernel.source = render::render_forward(kernel.plan);
  kernel.module = cpu::compile(kernel.source, kernel.plan.entry + ".metal", cpu::CompileOptions{});
  return kernel;
}

reference::AttentionProblem case_options(const ForwardCase& c, uint32_t head_dim, uint32_t head_dim_v) {
  reference::AttentionProblem o;
  o.heads_q = c.heads_q;
  o.heads_kv = c.heads_kv;
  o.head_dim = head_dim;
  o.head_dim_v = head_dim_v;
  o.causal = selftest::reference_causal(c.causal);
  o.scale = c.scale;
  o.window = c.window;
  o.softcap = c.softcap;
  o.dropout = c.dropout;
  if (c.mods) {
    o.score_mod = c.mods->score_mod;
    o.mask_mod = c.mods->mask_mod;
  }
  if (c.adjust_reference) c.adjust_reference(o);
  return o;
}

ForwardOutcome run_forward_case(const ForwardCase& c) {
  if (c.page_size) return run_paged_case(c);  // queries dense, or packed (varlen_q)
  if (!c.varlen_q.empty()) return run_varlen_case(c);
  // A backward case first runs the forward kernel of the same features.
  const CaseKernel kernel = compile_forward_kernel(c);
  const plan::KernelPlan& plan = kernel.plan;
  const auto& module = kernel.module;
  ForwardOutcome outcome;
  outcome.kernel_source = kernel.source;

  const reference::ElementType type = selftest::reference_type(c.dtype);
  reference::AttentionProblem problem = case_options(c, plan.spec.head_dim, plan.spec.head_dim_v);
  problem.batch = c.batch;
  problem.seq_q = c.seq_q;
  problem.seq_k = c.seq_k;
  problem.q = reference::random_tensor(c.batch * c.heads_q * c.seq_q * problem.head_dim, c.seed * 3 + 0, type, c.q_scale);
  const uint64_t kv_rows = c.batch * c.heads_kv * c.seq_k;
  const CaseKv k_rows = case_kv(c, kv_rows, problem.head_dim, c.seed * 3 + 1, case_k_scale(c));
  const CaseKv v_rows = case_kv(c, kv_rows, problem.head_dim_v, c.seed * 3 + 2, case_v_scale(c));
  problem.k = k_rows.values;
  problem.v = v_rows.values;
  MaskData mask;
  if (c.mask != spec::MaskKind::none) {
    mask = make_mask(c, type);
    problem.mask_shape = mask.extents;
    if (c.mask == spec::MaskKind::boolean) problem.bool_mask = mask.visible;
    else problem.additive_mask = mask.additive;
  }
  std::vector<float> slopes;
  if (c.alibi) {
    problem.alibi_slopes = case_alibi_slopes(c);
    slopes.assign(problem.alibi_slopes.begin(), problem.alibi_slopes.end());
  }
  std::vector<float> sinks;
  if (c.sinks) {
    problem.sinks = case_sinks(c);
    sinks.assign(problem.sinks.begin(), problem.sinks.end());
  }

  const AttentionShape shape{c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_k};
  const KvFormat kv_format = case_kv_format(c);
  ForwardStrides strides = contiguous_bhsd(shape, plan.spec.head_dim, plan.spec.head_dim_v, kv_format);
  if (c.bshd) {
    strides.q = bshd_strides(c.heads_q, c.seq_q, plan.spec.head_dim);
    strides.k = bshd_strides(c.heads_kv, c.seq_k, kv_row_units(kv_format, plan.spec.head_dim));
    strides.v = bshd_strides(c.heads_kv, c.seq_k, kv_row_units(kv_format, plan.spec.head_dim_v));
    strides.out = bshd_strides(c.heads_q, c.seq_q, plan.spec.head_dim_v);
  }
  const ForwardKernelInfo info = plan::forward_kernel_info(plan);
  ForwardCall call;
  call.shape = shape;
  call.strides = strides;
  call.scale = c.scale;
  call.softcap = c.softcap;
  if (c.window) std::tie(call.window_left, call.window_right) = *c.window;
  if (c.mask != spec::MaskKind::none) call.mask_strides = broadcast_strides(mask.extents);
  call.alibi_per_batch = c.alibi_per_batch;
  call.splits = c.splits;
  call.k_scale = case_k_scale(c);
  call.v_scale = case_v_scale(c);
  if (c.dropout) {
    call.dropout_p = c.dropout->p;
    call.dropout_seed = c.dropout->seed;
    call.dropout_offset = c.dropout->offset;
  }
  if (c.reuse_block_classes) call.block_classes = BlockClasses::given;
  const DispatchPlan dispatch = plan_forward(info, call);

  std::vector<std::byte> q = device_tensor(problem.q, c.batch, c.heads_q, c.seq_q, problem.head_dim, strides.q, type,
                                           dispatch.buffer("q")->bytes);
  std::vector<std::byte> k = case_kv_buffer(c, k_rows, c.batch, c.heads_kv, c.seq_k, problem.head_dim, strides.k,
                                            dispatch.buffer("k")->bytes);
  std::vector<std::byte> v = case_kv_buffer(c, v_rows, c.batch, c.heads_kv, c.seq_k, problem.head_dim_v, strides.v,
                                            dispatch.buffer("v")->bytes);
  std::vector<std::byte> out(dispatch.buffer("out")->bytes, std::byte{0x7f});  // garbage: every element must be written
  std::vector<float> lse(c.batch * c.heads_q * c.seq_q, 12345.0f);
  std::map<uint32_t, std::span<std::byte>> tensors = {
      {plan::kQIndex, q}, {plan::kKIndex, k}, {plan::kVIndex, v}, {plan::kOutIndex, out}};
  if (c.lse) tensors[plan::kLseIndex] = std::as_writable_bytes(std::span(lse));
  std::vector<std::byte> mask_bytes;
  if (c.mask == spec::MaskKind::boolean) {
    mask_bytes.resize(mask.visible.size());
    std::memcpy(mask_bytes.data(), mask.visible.data(), mask_bytes.size());
  } else if (c.mask == spec::MaskKind::additive) {
    const uint64_t n = mask.additive.size();
    mask_bytes = device_tensor(mask.additive, 1, 1, 1, n, {n, n, n}, type, n * spec::dtype_bytes(c.dtype));
  }
  if (c.mask != spec::MaskKind::none) tensors[plan::kMaskIndex] = mask_bytes;
  if (c.alibi) tensors[plan::kAlibiIndex] = std::as_writable_bytes(std::span(slopes));
  if (c.sinks) tensors[plan::kSinksIndex] = std::as_writable_bytes(std::span(sinks));
  CaseModInputs mods = case_mod_inputs(c);
  mods.bind(tensors);
  std::vector<std::byte> block_classes;
  if (c.reuse_block_classes) {  // the classes alone, then the forward that reuses them
    ForwardCall classes_call = call;
    classes_call.block_classes = BlockClasses::only;
    const DispatchPlan classes = plan_forward(info, classes_call);
    block_classes.assign(classes.buffer("block_classes")->bytes, std::byte{0});  // "hidden": unwritten would show
    std::map<uint32_t, std::span<std::byte>> classes_tensors = {{kForwardBlockClasses, block_classes}};
    for (const auto& [index, bytes] : tensors)
      if (index >= kForwardModScalars) classes_tensors[index] = bytes;
    outcome.backward = cpu::execute(*module, classes, classes_tensors);  // its findings count too
    tensors[kForwardBlockClasses] = block_classes;
  }
  outcome.dispatch = cpu::execute(*module, dispatch, tensors, {}, {}, c.tensor_layout_seed);

  const reference::AttentionResult expected = reference::reference_attention(problem);
  const reference::AttentionResult naive = reference::naive_attention_in_dtype(with_kv_in(problem, type), type);
  const std::vector<float> got = read_tensor(out, c.batch, c.heads_q, c.seq_q, problem.head_dim_v, strides.out, type);
  outcome.out = reference::check_output(got, expected, naive, type, problem);
  outcome.judge_forward = c.judge_forward;
  outcome.out_values = got;
  outcome.lse_values = lse;
  for (const KernelLaunch& l : dispatch.launches)
    if (l.entry == plan.entry && plan.spec.kind == spec::Kind::decode) outcome.splits = l.threadgroups[0];
  if (c.kind == spec::Kind::backward) {
    // dO, then the backward kernels on the forward's out and lse.
    const std::vector<double> d_out =
        reference::random_tensor(c.batch * c.heads_q * c.seq_q * problem.head_dim_v, c.seed * 3 + 7, type);
    const plan::KernelPlan bplan = plan::plan_kernel(make_spec(c));
    auto bmodule = cpu::compile(render::render_forward(bplan), bplan.entry + ".metal", cpu::CompileOptions{});
    const DispatchPlan bdispatch = plan_forward(plan::forward_kernel_info(bplan), call);
    std::vector<std::byte> do_bytes = device_tensor(d_out, c.batch, c.heads_q, c.seq_q, problem.head_dim_v, strides.out,
                                                    type, bdispatch.buffer("d_out")->bytes);
    std::vector<std::byte> dq(bdispatch.buffer("dq")->bytes, std::byte{0x7f}), dk(bdispatch.buffer("dk")->bytes, std::byte{0x7f}),
        dv(bdispatch.buffer("dv")->bytes, std::byte{0x7f});
    tensors[plan::kDOutIndex] = do_bytes;
    tensors[plan::kDqIndex] = dq;
    tensors[plan::kDkIndex] = dk;
    tensors[plan::kDvIndex] = dv;
    std::vector<float> d_sinks(c.sinks ? c.heads_q : 0, 12345.0f);
    if (c.sinks) tensors[plan::kDSinksIndex] = std::as_writable_bytes(std::span(d_sinks));
    // The gradients of the float captured tensors score_mod reads, in capture order.
    const ForwardKernelInfo binfo = plan::forward_kernel_info(bplan);
    std::vector<std::pair<size_t, std::vector<float>>> capture_grads;
    for (size_t k = 0; k < binfo.captures.size(); ++k)
      if (binfo.captures[k].gradient)
        capture_grads.emplace_back(k, std::vector<float>(bdispatch.buffer(binfo.captures[k].gradient_buffer)->bytes / 4,
                                                         12345.0f));
    for (size_t r = 0; r < capture_grads.size(); ++r)
      tensors[kBackwardFirstCaptureGrad + uint32_t(r)] = std::as_writable_bytes(std::span(capture_grads[r].second));
    outcome.backward = cpu::execute(*bmodule, bdispatch, tensors);

    const reference::AttentionGradients want = reference::reference_attention_backward(problem, d_out);
    const reference::AttentionGradients naive_grads = reference::naive_attention_backward_in_dtype(problem, d_out, type);
    const std::vector<float> got_dq = read_tensor(dq, c.batch, c.heads_q, c.seq_q, problem.head_dim, strides.q, type);
    const std::vector<float> got_dk = read_tensor(dk, c.batch, c.heads_kv, c.seq_k, problem.head_dim, strides.k, type);
    const std::vector<float> got_dv = read_tensor(dv, c.batch, c.heads_kv, c.seq_k, problem.head_dim_v, strides.v, type);
    outcome.gradient_values = {got_dq, got_dk, got_dv};
    if (!c.adjust_reference)  // (a built-in's reference does not read the case's tables)
      for (const auto& [k, got] : capture_grads) {
        outcome.gradient_values.push_back(got);
        outcome.gradients.push_back(check_capture_gradient(c, problem, d_out, k, got, type));
      }
    outcome.gradients.push_back(reference::check_gradient(got_dq, want.dq, naive_grads.dq, type, "dq",
                                                          {c.batch, c.heads_q, c.seq_q, problem.head_dim}));
    outcome.gradients.push_back(reference::check_gradient(got_dk, want.dk, naive_grads.dk, type, "dk",
                                                          {c.batch, c.heads_kv, c.seq_k, problem.head_dim}));
    outcome.gradients.push_back(reference::check_gradient(got_dv, want.dv, naive_grads.dv, type, "dv",
                                                          {c.batch, c.heads_kv, c.seq_k, problem.head_dim_v}));
    if (c.sinks) {
      outcome.gradient_values.push_back(d_sinks);
      outcome.gradients.push_back(
          reference::check_gradient(d_sinks, want.d_sinks, naive_grads.d_sinks, type, "d_sinks", {1, 1, 1, c.heads_q}));
    }
  }
  outcome.lse = c.lse ? reference::check_lse(lse, expected, problem) : reference::ToleranceVerdict{true, 0, 0, 0, "no lse"};
  return outcome;
}

}  // namespace mfagen::test
