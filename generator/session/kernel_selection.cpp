#include "session/kernel_selection.h"

#include <fmt/format.h>

#include <tuple>
#include <vector>


namespace mfagen::session {

CallRequest request_with_shape(const CallLayout& geometry) {
  CallRequest r;
  r.batch = geometry.shape.batch;
  r.head_dim = geometry.head_dim;
  r.head_dim_v = geometry.head_dim_v;
  r.heads_q = geometry.shape.heads_q;
  r.heads_kv = geometry.shape.heads_kv;
  r.seq_q = geometry.shape.seq_q;
  r.seq_k = geometry.shape.seq_k;
  return r;
}
namespace {

std::string describe_kernel(const KernelEntry& k) {
  const ForwardKernelInfo& i = k.info;
  return fmt::format("{} ({} {}, head_dim {}, head_dim_v {}, causal {}, gqa {}, mask {}{}{}{}{}{}{}{}{}{})", k.name,
                     to_string(k.kind), to_string(k.dtype), i.head_dim, i.head_dim_v, to_string(k.causal), i.gqa,
                     i.mask == MaskInput::none ? "none" : i.mask == MaskInput::boolean ? "bool" : "additive",
                     i.window ? ", window" : "", i.softcap ? ", softcap" : "", i.alibi ? ", alibi" : "",
                     i.sinks ? ", sinks" : "", i.varlen ? ", varlen" : "",
                     i.paged ? ", paged" : "",
                     i.kv_format != KvFormat::elements ? fmt::format(", kv_dtype {}", to_string(i.kv_format)) : "",
                     i.dropout ? ", dropout" : "",
                     k.requirements.tensor_ops ? ", TensorOps (Metal 4, apple10)" : "");
}

}  // namespace

std::string CallRequest::describe() const {
  std::string d = fmt::format("head_dim {}, head_dim_v {}, {} q heads over {} kv heads, {} queries", head_dim,
                              head_dim_v, heads_q, heads_kv, seq_q);
  if (dtype) d += fmt::format(", dtype {}", spec::to_string(*dtype));
  if (causal) d += fmt::format(", causal {}", spec::to_string(*causal));
  if (has_mask) d += ", a mask";
  if (alibi) d += ", ALiBi slopes";
  if (softcap) d += ", a softcap";
  if (window) d += ", a window";
  if (sinks) d += ", sink logits";
  if (varlen) d += fmt::format(", {} packed sequences", batch);
  if (paged) d += ", a paged KV cache";
  if (kv_format != KvFormat::elements) d += fmt::format(", {} k and v", to_string(kv_format));
  if (dropout) d += ", dropout";
  if (mods) d += ", captured tensors or scalars (score_mod / mask_mod)";
  if (backward) d += ", dO (backward)";
  return d;
}

AttentionQuery query_for(const CallRequest& r, KernelKind kind, ElementType dtype, CausalMode causal, MaskInput mask,
                         bool need_lse, uint64_t mods_id) {
  AttentionQuery q;
  q.kind = kind;
  q.dtype = dtype;
  q.head_dim = uint32_t(r.head_dim);
  q.head_dim_v = uint32_t(r.head_dim_v);
  q.causal = causal;
  q.mask = mask;
  q.window = r.window;
  q.softcap = r.softcap;
  q.alibi = r.alibi;
  q.sinks = r.sinks;
  q.varlen = r.varlen;
  q.paged = r.paged;
  q.kv_format = r.kv_format;
  q.dropout = r.dropout;
  q.mods_id = mods_id;
  q.need_lse = need_lse;
  q.shape = {r.batch, r.heads_q, r.heads_kv, r.seq_q, r.seq_k};
  return q;
}

const KernelEntry& select_kernel(const Library& library, const CallRequest& request, const std::string& spec_file,
                                 const DeviceCapabilities& device) {
  // The (dtype, causal, mask kind, score_mod/mask_mod) combinations the set offers, in spec order.
  std::vector<std::tuple<ElementType, CausalMode, MaskInput, uint64_t>> keys;
  for (const KernelEntry& k : library.kernels()) {
    if (request.dtype && to_string(k.dtype) != spec::to_string(*request.dtype)) continue;
    if (request.causal && to_string(k.causal) != spec::to_string(*request.causal)) continue;
    if ((k.info.mask != MaskInput::none) != request.has_mask) continue;
    if (request.mods && k.info.mods_id == 0) continue;
    const auto key = std::make_tuple(k.dtype, k.causal, k.info.mask, k.info.mods_id);
    bool seen = false;
    for (const auto& other : keys) seen = seen || other == key;
    if (!seen) keys.push_back(key);
  }
  const KernelKind kind = request.backward ? KernelKind::backward : KernelKind::forward;
  for (const auto& [dtype, causal, mask, mods_id] : keys)
    for (bool need_lse : {true, false})  // run writes lse.npy when the kernel can
      if (const KernelEntry* k = library.find(query_for(request, kind, dtype, causal, mask, need_lse, mods_id), device))
        return *k;
  std::string have;
  for (const KernelEntry& k : library.kernels()) have += "\n  " + describe_kernel(k);
  throw CallError(fmt::format("{} has no kernel for this call ({}); its kernels:{}", spec_file, request.describe(),
                              have));
}

}  // namespace mfagen::session
