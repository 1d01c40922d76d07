#include "selftest/cache_append_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <span>

#include "cache_write.h"
#include "mfagen/cache_append_dispatch.h"
#include "random_inputs.h"
#include "selftest/case_inputs.h"

namespace mfagen::selftest {
namespace {

// The step every cache write case makes: packed new rows are a chunk of 5
// from position 9 (crossing pages of 4), one decode row at an empty cache and
// a sequence with none; dense new rows (the same count for every sequence)
// are 2 per sequence.
const std::vector<int32_t> kCacheSeqlens = {9, 0, 4};
constexpr uint32_t kPageSize = 4, kDenseCacheRows = 16;

std::vector<uint32_t> new_rows_of(const SelftestCase& c) {
  return c.kernel.layout == spec::Layout::varlen ? std::vector<uint32_t>{5, 1, 0} : std::vector<uint32_t>{2, 2, 2};
}

}  // namespace

std::string describe_append_call(const SelftestCase& c) {
  const std::vector<uint32_t> new_rows = new_rows_of(c);
  std::string d = fmt::format("B {}, Hkv {}, new rows {} at cache lengths {}", new_rows.size(), c.shape.heads_kv,
                              fmt::join(new_rows, "/"), fmt::join(kCacheSeqlens, "/"));
  d += c.kernel.kv_cache == spec::KvCache::paged ? fmt::format(", pages of {}", kPageSize)
                                                  : fmt::format(", {} cache rows", kDenseCacheRows);
  if (c.kernel.layout == spec::Layout::varlen) d += ", packed new rows";
  return d;
}

void run_append_case(const SelftestCase& c, const Library& library, Backend& backend, bool inject,
                     CaseResult& result) {
  const auto it = std::find_if(library.kernels().begin(), library.kernels().end(),
                               [&](const KernelEntry& k) { return k.name == c.kernel.name; });
  if (it == library.kernels().end()) throw std::runtime_error("the library has no kernel " + c.kernel.name);
  const KernelEntry& kernel = *it;
  const ForwardKernelInfo& info = kernel.info;
  const std::vector<uint32_t> kNewRows = new_rows_of(c);
  const uint64_t batch = kNewRows.size(), heads = c.shape.heads_kv;
  CacheAppendCall call{.batch = batch, .heads_kv = heads, .new_rows = *std::max_element(kNewRows.begin(), kNewRows.end())};
  std::vector<int32_t> cu = {0};
  for (uint32_t n : kNewRows) cu.push_back(cu.back() + int32_t(n));
  if (info.varlen) call.total_new = uint64_t(cu.back());
  std::vector<int32_t> table;
  if (info.paged) {
    call.page_size = kPageSize;
    call.max_pages = 4;
    call.num_pages = batch * call.max_pages + 2;
    std::vector<int32_t> pages(call.num_pages);
    std::iota(pages.begin(), pages.end(), 0);
    std::shuffle(pages.begin(), pages.end(), std::mt19937(uint32_t(c.seed)));
    table.assign(pages.begin(), pages.begin() + int64_t(batch * call.max_pages));
  } else {
    call.cache_rows = kDenseCacheRows;
  }
  if (info.kv_format == KvFormat::fp8_e4m3) call.k_scale = kFp8KScale, call.v_scale = kFp8VScale;
  contiguous_append_strides(info, call);
  check_cache_append(info, call, cu, table, kCacheSeqlens);
  const DispatchPlan plan = plan_cache_append(info, call);

  const reference::ElementType type = reference_type(c.kernel.dtype);
  const uint64_t rows = uint64_t(cu.back());
  std::mt19937 pattern(uint32_t(c.seed * 3 + 1));
  std::vector<uint8_t> caches[2], wanted[2], new_bytes[2];
  for (int which = 0; which < 2; ++which) {
    reference::CacheWrite w;
    w.type = type;
    if (info.kv_format != KvFormat::elements) w.quant = reference_quant(c.kernel.kv_dtype);
    w.scale = float(which == 0 ? call.k_scale : call.v_scale);
    w.heads_kv = heads;
    w.columns = which == 0 ? info.head_dim : info.head_dim_v;
    w.new_rows = kNewRows;
    w.cache_seqlens = kCacheSeqlens;
    w.page_size = call.page_size;
    w.max_pages = call.max_pages;
    w.cache_rows = call.cache_rows;
    w.block_table = table;
    // Values exact in the dtype, sequence by sequence, (Hkv, D) per row.
    const std::vector<double> wide = reference::random_tensor(rows * heads * w.columns, c.seed * 5 + which, type);
    const std::vector<float> values(wide.begin(), wide.end());
    new_bytes[which] = reference::new_rows_bytes(w, values, info.varlen ? 0 : call.new_rows);
    caches[which].resize(plan.buffer(which == 0 ? "k" : "v")->bytes);
    for (uint8_t& x : caches[which]) x = uint8_t(pattern() & 0xFF);
    wanted[which] = reference::written_cache(w, caches[which], values);
  }

  std::vector<int32_t> cu_buffer = cu, table_buffer = table, lengths = kCacheSeqlens;
  TensorMap tensors = {{kAppendKCache, std::as_writable_bytes(std::span(caches[0]))},
                       {kAppendVCache, std::as_writable_bytes(std::span(caches[1]))},
                       {kAppendNewK, std::as_writable_bytes(std::span(new_bytes[0]))},
                       {kAppendNewV, std::as_writable_bytes(std::span(new_bytes[1]))},
                       {kAppendCacheSeqlens, std::as_writable_bytes(std::span(lengths))}};
  if (info.varlen) tensors[kAppendCuSeqlens] = std::as_writable_bytes(std::span(cu_buffer));
  if (info.paged) tensors[kAppendBlockTable] = std::as_writable_bytes(std::span(table_buffer));
  result.kernels.push_back({kernel.name, uint32_t(plan.launches.size())});
  result.seconds += backend.run(library, kernel, plan, tensors).seconds;

  for (int which = 0; which < 2; ++which) {
    std::vector<uint8_t>& got = caches[which];
    if (inject) got[got.size() / 2] ^= 0x55;
    size_t differing = 0, first = got.size();
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != wanted[which][i]) {
        ++differing;
        first = std::min(first, i);
      }
    Check check{which == 0 ? "k cache" : "v cache", differing == 0, double(differing), 0.0, ""};
    check.detail = differing == 0 ? fmt::format("{} bytes, every one as the reference writes it", got.size())
                                  : fmt::format("{} of {} bytes differ from the reference's, the first at byte {}",
                                                differing, got.size(), first);
    result.checks.push_back(std::move(check));
  }
}

}  // namespace mfagen::selftest
