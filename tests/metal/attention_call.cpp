#include "attention_call.h"

#include <cstring>

#include "attention_reference.h"
#include "selftest/case_inputs.h"
#include "selftest/case_layouts.h"
#include "session/tensor_encoding.h"

namespace mfagen::test {

AttentionCall make_call(const selftest::SelftestCase& c, const KernelEntry& kernel) {
  const selftest::CaseInputs in = selftest::make_inputs(c);
  AttentionCall out;
  out.call = selftest::forward_call(c);
  out.inputs[kForwardQ] = in.q;
  out.inputs[kForwardK] = in.k;
  out.inputs[kForwardV] = in.v;
  if (!in.mask.empty()) out.inputs[kForwardMask] = in.mask;
  if (!in.alibi_slopes.empty()) out.inputs[kForwardAlibi] = in.alibi_slopes;
  if (!in.sinks.empty()) out.inputs[kForwardSinks] = in.sinks;
  if (selftest::serving_layout(c)) {  // packed sequences or a paged cache, as the selftest lays them out
    selftest::LaidOutInputs laid = selftest::lay_out(c, in, out.call);
    out.call = laid.call;
    out.inputs[kForwardQ] = laid.q;
    out.inputs[kForwardK] = laid.k;
    out.inputs[kForwardV] = laid.v;
    const auto bytes_of = [](const std::vector<int32_t>& values) {
      std::vector<std::byte> b(values.size() * sizeof(int32_t));
      std::memcpy(b.data(), values.data(), b.size());
      return b;
    };
    if (!laid.cu_seqlens_q.empty()) out.inputs[kForwardCuSeqlensQ] = bytes_of(laid.cu_seqlens_q);
    if (!laid.cu_seqlens_k.empty()) out.inputs[kForwardCuSeqlensK] = bytes_of(laid.cu_seqlens_k);
    if (!laid.block_table.empty()) out.inputs[kForwardBlockTable] = bytes_of(laid.block_table);
    if (!laid.cache_seqlens.empty()) out.inputs[kForwardCacheSeqlens] = bytes_of(laid.cache_seqlens);
  }
  if (kernel.info.backward) {
    // What a forward kernel gives the backward: out and lse of the same math
    // in the input dtype.
    const reference::AttentionResult forward =
        reference::naive_attention_in_dtype(in.problem, selftest::reference_type(c.kernel.dtype));
    out.inputs[kForwardOut] = session::encode_elements(forward.out, c.kernel.dtype);
    const std::vector<float> lse(forward.lse.begin(), forward.lse.end());
    out.inputs[kForwardLse].resize(lse.size() * sizeof(float));
    std::memcpy(out.inputs[kForwardLse].data(), lse.data(), out.inputs[kForwardLse].size());
    out.inputs[kBackwardDOut] = in.d_out_bytes;
  }
  for (const BufferRequirement& b : Library::plan(kernel, out.call).buffers)
    if (!b.scratch && b.index != kForwardParams && !out.inputs.count(b.index))
      out.inputs[b.index].assign(b.bytes, std::byte{0});
  return out;
}

selftest::SelftestCase case_for(const spec::KernelSpec& kernel, const AttentionShape& shape) {
  selftest::SelftestCase c;
  c.name = kernel.name;
  c.kernel = kernel;
  c.shape = shape;
  if (kernel.softcap) c.softcap = 20;
  if (kernel.window) c.window_left = 9, c.window_right = 3;
  return c;
}

TensorMap bind(std::map<uint32_t, std::vector<std::byte>>& storage) {
  TensorMap tensors;
  for (auto& [index, bytes] : storage) tensors[index] = bytes;
  return tensors;
}

}  // namespace mfagen::test
