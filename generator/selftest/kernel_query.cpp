#include "selftest/kernel_query.h"

#include <fmt/format.h>

#include <stdexcept>

#include "plan/dispatch_info.h"
#include "session/kernel_selection.h"
#include "spec/canonical.h"

namespace mfagen::selftest {
namespace {

ElementType runtime_dtype(spec::DType t) {
  switch (t) {
    case spec::DType::float16: return ElementType::float16;
    case spec::DType::bfloat16: return ElementType::bfloat16;
    case spec::DType::float32: return ElementType::float32;
  }
  return ElementType::float32;
}

CausalMode runtime_causal(spec::Causal c) {
  switch (c) {
    case spec::Causal::none: return CausalMode::none;
    case spec::Causal::top_left: return CausalMode::top_left;
    case spec::Causal::bottom_right: return CausalMode::bottom_right;
  }
  return CausalMode::none;
}

MaskInput runtime_mask(spec::MaskKind m) {
  switch (m) {
    case spec::MaskKind::none: return MaskInput::none;
    case spec::MaskKind::boolean: return MaskInput::boolean;
    case spec::MaskKind::additive: return MaskInput::additive;
  }
  return MaskInput::none;
}

}  // namespace

AttentionQuery query_for_kernel(const spec::KernelSpec& kernel, const AttentionShape& shape, KernelKind kind,
                                bool need_lse) {
  session::CallRequest request;
  request.batch = shape.batch;
  request.heads_q = shape.heads_q;
  request.heads_kv = shape.heads_kv;
  request.seq_q = shape.seq_q;
  request.seq_k = shape.seq_k;
  request.head_dim = kernel.head_dim;
  request.head_dim_v = kernel.head_dim_v;
  request.window = kernel.window;
  request.softcap = kernel.softcap;
  request.alibi = kernel.alibi;
  request.sinks = kernel.sinks;
  request.kv_format = plan::kv_format(kernel);
  request.dropout = kernel.dropout;
  request.varlen = kernel.layout == spec::Layout::varlen;
  request.paged = kernel.kv_cache == spec::KvCache::paged;
  return session::query_for(request, kind, runtime_dtype(kernel.dtype), runtime_causal(kernel.causal),
                            runtime_mask(kernel.mask), need_lse, spec::mods_id(kernel));
}

const KernelEntry& select_named(const Library& library, const AttentionQuery& query, const std::string& expected,
                                const DeviceCapabilities& device) {
  const KernelEntry& kernel = library.select(query, device);
  if (kernel.name != expected)
    throw std::runtime_error(fmt::format("selection chose {} for this call; the kernel meant is {}", kernel.name,
                                         expected));
  return kernel;
}

}  // namespace mfagen::selftest
