#include "session/cache_append_call.h"

#include <fmt/format.h>

#include <span>

#include "io/npy.h"
#include "mfagen/cache_append_dispatch.h"
#include "session/call_error.h"

namespace mfagen::session {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw CallError(message);
}

// A cache's shape in storage units: (entries, rows, Hkv, units of a row).
void check_cache(const HostTensor& cache, const ForwardKernelInfo& info, uint32_t columns, spec::DType dtype) {
  const uint64_t units = kv_row_units(info.kv_format, columns);
  const uint64_t unit_bytes = kv_unit_bytes(info.kv_format, spec::dtype_bytes(dtype));
  const bool quantized = info.kv_format != KvFormat::elements;
  require(cache.shape.size() == 4 && cache.element_strides() == contiguous_strides(cache.shape),
          fmt::format("{}: shape {}; expected a C-contiguous 4-d cache", cache.name, io::shape_repr(cache.shape)));
  require(quantized ? cache.dtype == HostDType::uint8 : cache.dtype == host_dtype_of(dtype),
          fmt::format("{}: dtype {}; expected {}", cache.name, to_string(cache.dtype),
                      quantized ? "uint8 (a quantized cache's raw stored rows)" : to_string(host_dtype_of(dtype))));
  const uint64_t last = quantized ? units * unit_bytes : columns;
  require(cache.shape[3] == last, fmt::format("{}: rows of {}; expected {} ({} values)", cache.name, cache.shape[3],
                                              last, columns));
}

}  // namespace

RunStats run_cache_append(const SpecLibrary& set, const CacheAppendInputs& in, Backend& backend) {
  const KernelEntry& kernel = set.library.kernels().front();
  const ForwardKernelInfo& info = kernel.info;
  require(info.cache_append, "run_cache_append: kernel " + kernel.name + " is not a cache_append kernel");
  const spec::DType dtype = set.plan_of(kernel).spec.dtype;
  for (const HostTensor* t : {&in.k_new, &in.v_new}) {
    t->check_layout();
    require(t->dtype == host_dtype_of(dtype), fmt::format("{}: dtype {}; expected the kernel's {}", t->name,
                                                           to_string(t->dtype), to_string(host_dtype_of(dtype))));
    require(t->shape.size() == (info.varlen ? 3u : 4u),
            fmt::format("{}: shape {}; expected {}", t->name, io::shape_repr(t->shape),
                        info.varlen ? "(total new rows, heads_kv, dim)" : "(batch, heads_kv, new rows, dim)"));
  }
  check_cache(in.k_cache, info, info.head_dim, dtype);
  check_cache(in.v_cache, info, info.head_dim_v, dtype);
  const size_t rank = in.k_new.shape.size();
  require(in.k_new.shape[rank - 1] == info.head_dim && in.v_new.shape[rank - 1] == info.head_dim_v,
          fmt::format("k_new, v_new: head dims {} and {}; the kernel writes {} and {}", in.k_new.shape[rank - 1],
                      in.v_new.shape[rank - 1], info.head_dim, info.head_dim_v));
  require(std::equal(in.k_new.shape.begin(), in.k_new.shape.end() - 1, in.v_new.shape.begin()),
          fmt::format("{} has shape {} and {} has {}: they must match but for the head dim", in.k_new.name,
                      io::shape_repr(in.k_new.shape), in.v_new.name, io::shape_repr(in.v_new.shape)));
  require(in.k_cache.shape[0] == in.v_cache.shape[0] && in.k_cache.shape[1] == in.v_cache.shape[1] &&
              in.k_cache.shape[2] == in.v_cache.shape[2],
          fmt::format("{} has shape {} and {} has {}: they must match but for the row", in.k_cache.name,
                      io::shape_repr(in.k_cache.shape), in.v_cache.name, io::shape_repr(in.v_cache.shape)));

  CacheAppendCall call;
  call.batch = in.cache_seqlens.size();
  call.heads_kv = in.k_new.shape[rank - 2 - (info.varlen ? 0 : 1)];
  require(call.batch >= 1, "cache_seqlens: expected one length per sequence, found none");
  const std::vector<int64_t> ks = in.k_new.element_strides(), vs = in.v_new.element_strides();
  if (info.varlen) {
    require(in.cu_seqlens.size() == call.batch + 1,
            fmt::format("cu_seqlens: {} entries; {} sequences need {}", in.cu_seqlens.size(), call.batch, call.batch + 1));
    call.total_new = in.k_new.shape[0];
    for (size_t b = 0; b + 1 < in.cu_seqlens.size(); ++b)
      call.new_rows = std::max<uint64_t>(call.new_rows, uint64_t(std::max(0, in.cu_seqlens[b + 1] - in.cu_seqlens[b])));
    call.new_rows = std::max<uint64_t>(call.new_rows, 1);
    call.k_new = {0, uint64_t(ks[1]), uint64_t(ks[0])};
    call.v_new = {0, uint64_t(vs[1]), uint64_t(vs[0])};
  } else {
    require(in.k_new.shape[0] == call.batch,
            fmt::format("{}: batch {}; cache_seqlens has {} lengths", in.k_new.name, in.k_new.shape[0], call.batch));
    call.new_rows = in.k_new.shape[2];
    call.k_new = {uint64_t(ks[0]), uint64_t(ks[1]), uint64_t(ks[2])};
    call.v_new = {uint64_t(vs[0]), uint64_t(vs[1]), uint64_t(vs[2])};
  }
  const uint64_t cache_heads = info.paged ? in.k_cache.shape[2] : in.k_cache.shape[1];
  require(cache_heads == call.heads_kv, fmt::format("{}: {} heads; the new rows have {}", in.k_cache.name,
                                                    cache_heads, call.heads_kv));
  if (info.paged) {
    call.num_pages = in.k_cache.shape[0];
    call.page_size = in.k_cache.shape[1];
    call.max_pages = in.max_pages;
  } else {
    require(in.k_cache.shape[0] == call.batch,
            fmt::format("{}: batch {}; cache_seqlens has {} lengths", in.k_cache.name, in.k_cache.shape[0], call.batch));
    call.cache_rows = in.k_cache.shape[2];
  }
  call.k_scale = in.k_scale;
  call.v_scale = in.v_scale;
  // Strides of the new rows are the tensors'; the caches' contiguous.
  const Strides3 k_new = call.k_new, v_new = call.v_new;
  contiguous_append_strides(info, call);
  call.k_new = k_new;
  call.v_new = v_new;
  DispatchPlan plan;
  try {
    check_cache_append(info, call, in.cu_seqlens, in.block_table, in.cache_seqlens);
    plan = plan_cache_append(info, call);
  } catch (const DispatchError& e) {
    throw CallError(e.what());
  }
  // Kernels only read the new rows and the tables; they write the caches in place.
  const auto bytes = [](const HostTensor& t) {
    return std::span(const_cast<std::byte*>(t.data), t.span_bytes());
  };
  std::vector<int32_t> lengths = in.cache_seqlens, table = in.block_table, cu = in.cu_seqlens;
  TensorMap tensors = {{kAppendKCache, bytes(in.k_cache)}, {kAppendVCache, bytes(in.v_cache)},
                       {kAppendNewK, bytes(in.k_new)},     {kAppendNewV, bytes(in.v_new)},
                       {kAppendCacheSeqlens, std::as_writable_bytes(std::span(lengths))}};
  if (info.paged) tensors[kAppendBlockTable] = std::as_writable_bytes(std::span(table));
  if (info.varlen) tensors[kAppendCuSeqlens] = std::as_writable_bytes(std::span(cu));
  return backend.run(set.library, kernel, plan, tensors);
}

}  // namespace mfagen::session
