#include "selftest/run_case.h"

#include <cmath>
#include <exception>
#include <span>
#include <vector>

#include "attention_backward_reference.h"
#include "attention_reference.h"
#include "gradient_tolerance.h"
#include "quantized_kv.h"
#include "selftest/cache_append_case.h"
#include "selftest/case_inputs.h"
#include "selftest/case_layouts.h"
#include "selftest/kernel_query.h"
#include "session/tensor_encoding.h"
#include "tolerance.h"

namespace mfagen::selftest {
namespace {

Check check_of(std::string tensor, const reference::ToleranceVerdict& v) {
  return {std::move(tensor), v.ok, v.max_abs_error, v.bound, v.detail};
}

// Far outside any tolerance: finite values move by more than 1 + |x| (the
// widest bound is 5e-2 |ref| + 5e-3 scaled by at most the tensor's largest
// value), and an lse of -inf (a row without keys) becomes 0.
void perturb_one_element(std::vector<float>& values) {
  if (values.empty()) return;
  float& x = values[values.size() / 2];
  x = std::isfinite(x) ? x + 1 + std::fabs(x) : 0.0f;
}

// Runs a call of `kernel`, recording the kernel, its launches and the time.
void run_kernel(Backend& backend, const Library& library, const KernelEntry& kernel, const ForwardCall& call,
                const TensorMap& tensors, CaseResult& result) {
  const DispatchPlan plan = Library::plan(kernel, call);
  result.kernels.push_back({kernel.name, uint32_t(plan.launches.size())});
  result.seconds += backend.run(library, kernel, plan, tensors).seconds;
}

class CaseRunner {
 public:
  CaseRunner(const SelftestCase& c, const Library& library, Backend& backend, bool inject, CaseResult& result)
      : c_(c), library_(library), backend_(backend), inject_(inject), result_(result), in_(make_inputs(c)),
        type_(reference_type(c.kernel.dtype)), call_(forward_call(c)) {}

  void run() {
    const bool backward = c_.kernel.kind == spec::Kind::backward;
    // A backward case takes out and lse from whichever forward kernel the
    // runtime picks for its features (it needs lse); the others must get
    // exactly their own kernel.
    const AttentionQuery forward_query =
        query_for_kernel(c_.kernel, c_.shape, KernelKind::forward, backward || c_.kernel.lse);
    const KernelEntry& forward =
        backward ? library_.select(forward_query, backend_.capabilities())
                 : select_named(library_, forward_query, c_.kernel.name, backend_.capabilities());
    run_forward(forward);
    if (backward) run_backward();
  }

 private:
  std::vector<float> judged(const std::vector<std::byte>& bytes) {
    std::vector<float> values = session::decode_elements(bytes, c_.kernel.dtype);
    if (inject_) perturb_one_element(values);
    return values;
  }

  TensorMap forward_tensors(bool with_lse) {
    TensorMap t = {{kForwardQ, in_.q}, {kForwardK, in_.k}, {kForwardV, in_.v}, {kForwardOut, out_}};
    if (with_lse) t[kForwardLse] = std::as_writable_bytes(std::span(lse_));
    if (!in_.mask.empty()) t[kForwardMask] = in_.mask;
    if (!in_.alibi_slopes.empty()) t[kForwardAlibi] = in_.alibi_slopes;
    if (!in_.sinks.empty()) t[kForwardSinks] = in_.sinks;
    return t;
  }

  void run_forward(const KernelEntry& kernel) {
    const AttentionShape& s = c_.shape;
    // Garbage to start with: every element must be written.
    out_.assign(s.batch * s.heads_q * s.seq_q * c_.kernel.head_dim_v * spec::dtype_bytes(c_.kernel.dtype),
                std::byte{0x7f});
    lse_.assign(s.batch * s.heads_q * s.seq_q, 12345.0f);
    if (serving_layout(c_)) {  // packed sequences or a paged cache: the dense inputs laid out so
      LaidOutInputs laid = lay_out(c_, in_, call_);
      TensorMap t = forward_tensors(kernel.info.lse);
      t[kForwardQ] = laid.q;
      t[kForwardK] = laid.k;
      t[kForwardV] = laid.v;
      const auto bind = [&](uint32_t index, std::vector<int32_t>& values) {
        if (!values.empty()) t[index] = std::as_writable_bytes(std::span(values));
      };
      bind(kForwardCuSeqlensQ, laid.cu_seqlens_q);
      bind(kForwardCuSeqlensK, laid.cu_seqlens_k);
      bind(kForwardBlockTable, laid.block_table);
      bind(kForwardCacheSeqlens, laid.cache_seqlens);
      run_kernel(backend_, library_, kernel, laid.call, t, result_);
      out_ = dense_out(c_, out_);
      lse_ = dense_lse(c_, lse_);
    } else {
      run_kernel(backend_, library_, kernel, call_, forward_tensors(kernel.info.lse), result_);
    }

    const reference::AttentionResult expected = reference::reference_attention(in_.problem);
    // Quantized caches: the yardstick dequantizes into the dtype.
    reference::AttentionProblem in_dtype = in_.problem;
    in_dtype.k = reference::rounded_to(std::move(in_dtype.k), type_);
    in_dtype.v = reference::rounded_to(std::move(in_dtype.v), type_);
    const reference::AttentionResult naive = reference::naive_attention_in_dtype(in_dtype, type_);
    result_.checks.push_back(
        check_of("out", reference::check_output(judged(out_), expected, naive, type_, in_.problem)));
    if (kernel.info.lse) {
      std::vector<float> lse = lse_;
      if (inject_) perturb_one_element(lse);
      result_.checks.push_back(check_of("lse", reference::check_lse(lse, expected, in_.problem)));
    }
  }

  void run_backward() {
    const KernelEntry& kernel =
        select_named(library_, query_for_kernel(c_.kernel, c_.shape, KernelKind::backward, false), c_.kernel.name,
                     backend_.capabilities());
    const AttentionShape& s = c_.shape;
    const uint64_t element = spec::dtype_bytes(c_.kernel.dtype), d = c_.kernel.head_dim, dv = c_.kernel.head_dim_v;
    std::vector<std::byte> dq(s.batch * s.heads_q * s.seq_q * d * element, std::byte{0x7f});
    std::vector<std::byte> dk(s.batch * s.heads_kv * s.seq_k * d * element, std::byte{0x7f});
    std::vector<std::byte> dv_bytes(s.batch * s.heads_kv * s.seq_k * dv * element, std::byte{0x7f});
    TensorMap tensors = forward_tensors(true);
    tensors[kBackwardDOut] = in_.d_out_bytes;
    tensors[kBackwardDq] = dq;
    tensors[kBackwardDk] = dk;
    tensors[kBackwardDv] = dv_bytes;
    std::vector<float> d_sinks(c_.kernel.sinks ? s.heads_q : 0, 12345.0f);
    if (c_.kernel.sinks) tensors[kBackwardDSinks] = std::as_writable_bytes(std::span(d_sinks));
    run_kernel(backend_, library_, kernel, call_, tensors, result_);

    const reference::AttentionGradients want = reference::reference_attention_backward(in_.problem, in_.d_out);
    const reference::AttentionGradients naive =
        reference::naive_attention_backward_in_dtype(in_.problem, in_.d_out, type_);
    auto judge = [&](const char* name, const std::vector<std::byte>& got, const std::vector<double>& ref,
                     const std::vector<double>& yardstick, uint64_t heads, uint64_t seq, uint64_t dim) {
      result_.checks.push_back(check_of(
          name, reference::check_gradient(judged(got), ref, yardstick, type_, name, {s.batch, heads, seq, dim})));
    };
    judge("dq", dq, want.dq, naive.dq, s.heads_q, s.seq_q, d);
    judge("dk", dk, want.dk, naive.dk, s.heads_kv, s.seq_k, d);
    judge("dv", dv_bytes, want.dv, naive.dv, s.heads_kv, s.seq_k, dv);
    if (c_.kernel.sinks) {  // float32 whatever the dtype
      if (inject_) perturb_one_element(d_sinks);
      result_.checks.push_back(check_of("d_sinks", reference::check_gradient(d_sinks, want.d_sinks, naive.d_sinks,
                                                                             type_, "d_sinks", {1, 1, 1, s.heads_q})));
    }
  }

  const SelftestCase& c_;
  const Library& library_;
  Backend& backend_;
  const bool inject_;
  CaseResult& result_;
  CaseInputs in_;
  const reference::ElementType type_;
  const ForwardCall call_;
  std::vector<std::byte> out_;
  std::vector<float> lse_;
};

}  // namespace

CaseResult run_case(const SelftestCase& c, const Library& library, Backend& backend, const RunOptions& options) {
  CaseResult result;
  result.name = c.name;
  result.call = c.describe_call();
  result.error_injected = !options.inject_error.empty() && c.name.find(options.inject_error) != std::string::npos;
  try {
    if (c.kernel.kind == spec::Kind::cache_append)
      run_append_case(c, library, backend, result.error_injected, result);
    else
      CaseRunner(c, library, backend, result.error_injected, result).run();
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace mfagen::selftest
