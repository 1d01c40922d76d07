#include "profile/synthetic_call.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <span>

#include "plan/dispatch_info.h"
#include "session/tensor_encoding.h"

namespace mfagen::profile {
namespace {

// `bytes` filled with a block of uniform values in [-1, 1] rounded to the
// dtype, repeated (the values matter little to the counts; a fixed seed keeps
// runs identical).
void fill_random(std::span<std::byte> bytes, spec::DType dtype) {
  std::mt19937 rng(20261124);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> block(4096);
  for (double& x : block) x = session::round_to_element(dtype, uniform(rng));
  const std::vector<std::byte> encoded = session::encode_elements(block, dtype);
  for (size_t at = 0; at < bytes.size(); at += encoded.size())
    std::memcpy(bytes.data() + at, encoded.data(), std::min(encoded.size(), bytes.size() - at));
}

// Quantized k and v: random codes under a small block scale (0.01 as
// float16) for q8_0 and q4_0, random fp8 codes other than NaN.
void fill_stored_rows(std::span<std::byte> bytes, KvFormat format) {
  std::mt19937 rng(20261125);
  for (std::byte& b : bytes) b = std::byte(rng() & 0x7E);  // never 0x7F: fp8's NaN
  if (format == KvFormat::fp8_e4m3) return;
  const uint64_t block = kv_unit_bytes(format, 0);
  for (size_t at = 0; at + block <= bytes.size(); at += block) {
    bytes[at] = std::byte{0x1F};  // 0x211F: 0.01 as float16, little-endian
    bytes[at + 1] = std::byte{0x21};
  }
}

void fill_float(std::span<std::byte> bytes, float value) {
  for (size_t at = 0; at + sizeof(float) <= bytes.size(); at += sizeof(float)) std::memcpy(bytes.data() + at, &value, 4);
}

void put_int32(std::span<std::byte> bytes, size_t i, int32_t value) {
  if ((i + 1) * sizeof(int32_t) <= bytes.size())
    std::memcpy(bytes.data() + i * sizeof(int32_t), &value, sizeof(int32_t));
}

void fill_int32(std::span<std::byte> bytes, const std::vector<int32_t>& values) {
  for (size_t i = 0; i < values.size(); ++i) put_int32(bytes, i, values[i]);
}

uint64_t pages_of(uint64_t keys) { return (keys + kSyntheticPageSize - 1) / kSyntheticPageSize; }

// Sequence b's pages follow those of sequence b - 1; entries past its pages stay 0.
void fill_block_table(std::span<std::byte> bytes, const std::vector<uint64_t>& keys, uint64_t max_pages) {
  uint64_t page = 0;
  for (size_t b = 0; b < keys.size(); ++b)
    for (uint64_t j = 0; j < pages_of(keys[b]); ++j) put_int32(bytes, b * max_pages + j, int32_t(page++));
}

std::vector<int32_t> to_int32(const std::vector<uint64_t>& lengths) {
  return std::vector<int32_t>(lengths.begin(), lengths.end());
}

}  // namespace

SequenceLengths uniform_lengths(const plan::CostShape& shape) {
  return {std::vector<uint64_t>(shape.batch, shape.seq_q), std::vector<uint64_t>(shape.batch, shape.seq_k)};
}

std::vector<int32_t> cumulative_lengths(const std::vector<uint64_t>& lengths) {
  std::vector<int32_t> cu = {0};
  for (uint64_t l : lengths) cu.push_back(cu.back() + int32_t(l));
  return cu;
}

ForwardCall synthetic_call(const plan::KernelPlan& p, const plan::CostShape& shape) {
  return synthetic_call(p, shape, uniform_lengths(shape));
}

ForwardCall synthetic_call(const plan::KernelPlan& p, const plan::CostShape& shape, const SequenceLengths& lengths) {
  const AttentionShape attention{shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q, shape.seq_k};
  ForwardCall call;
  call.shape = attention;
  const KvFormat kv = plan::kv_format(p.spec);
  call.strides = contiguous_bhsd(attention, p.spec.head_dim, p.spec.head_dim_v, kv);
  if (p.spec.softcap) call.softcap = 30;
  if (p.spec.window) call.window_left = shape.window_left, call.window_right = shape.window_right;
  if (p.spec.dropout) call.dropout_p = 0.1, call.dropout_seed = 20261125;  // a common training rate
  if (p.spec.mask != spec::MaskKind::none) call.mask_strides = broadcast_strides({1, 1, shape.seq_q, shape.seq_k});
  if (p.spec.layout == spec::Layout::varlen) {  // the sequences' rows, packed
    call.total_q = std::accumulate(lengths.q.begin(), lengths.q.end(), uint64_t(0));
    call.total_k = std::accumulate(lengths.k.begin(), lengths.k.end(), uint64_t(0));
    call.strides = packed_varlen(attention, call.total_q, p.spec.head_dim, p.spec.head_dim_v, kv);
  }
  if (p.spec.kv_cache == spec::KvCache::paged) {  // pages of kSyntheticPageSize keys, each sequence its own
    call.page_size = kSyntheticPageSize;
    call.max_pages = pages_of(shape.seq_k);
    call.num_pages = 0;
    for (uint64_t keys : lengths.k) call.num_pages += pages_of(keys);
    call.num_pages = std::max<uint64_t>(call.num_pages, 1);
    call.strides = paged_kv(attention, kSyntheticPageSize, p.spec.head_dim, p.spec.head_dim_v, kv);
    if (p.spec.layout == spec::Layout::varlen) {  // packed queries on the cache
      call.total_k = 0;
      call.strides = packed_paged(attention, call.total_q, kSyntheticPageSize, p.spec.head_dim, p.spec.head_dim_v, kv);
    }
  }
  return call;
}

void plan_synthetic_batch(const KernelEntry& kernel, ForwardCall& call, const SequenceLengths& lengths,
                          BatchPlan& plan) {
  if (!kernel.info.planned_batches) return;
  Library::plan_batch(kernel, call, cumulative_lengths(lengths.q), to_int32(lengths.k), plan);
  call.batch_plan = &plan;
}

std::map<uint32_t, std::vector<std::byte>> synthetic_tensors(const DispatchPlan& dispatch, const plan::KernelPlan& p,
                                                             const plan::CostShape& shape) {
  return synthetic_tensors(dispatch, p, shape, uniform_lengths(shape));
}

std::map<uint32_t, std::vector<std::byte>> synthetic_tensors(const DispatchPlan& dispatch, const plan::KernelPlan& p,
                                                             const plan::CostShape& shape,
                                                             const SequenceLengths& lengths,
                                                             const BatchPlan* batch_plan) {
  const uint64_t max_pages = pages_of(shape.seq_k);
  std::map<uint32_t, std::vector<std::byte>> tensors;
  for (const BufferRequirement& b : dispatch.buffers) {
    if (b.scratch || b.index == plan::kParamsIndex) continue;
    std::vector<std::byte>& bytes = tensors[b.index];
    bytes.assign(b.bytes, std::byte{0});
    if (batch_plan && (b.index == plan::kWorkItemsIndex || b.index == plan::kMergeItemsIndex)) {
      // A planned batch's items (these indices are dO and dQ in backward kernels, which plan no batch).
      const std::span<const std::byte> items = b.index == plan::kWorkItemsIndex
                                                   ? std::as_bytes(std::span(batch_plan->work))
                                                   : std::as_bytes(std::span(batch_plan->merges));
      std::memcpy(bytes.data(), items.data(), std::min(bytes.size(), items.size()));
      continue;
    }
    switch (b.index) {
      case plan::kKIndex:
      case plan::kVIndex:
        if (plan::kv_format(p.spec) != KvFormat::elements) {
          fill_stored_rows(bytes, plan::kv_format(p.spec));
          break;
        }
        fill_random(bytes, p.spec.dtype);
        break;
      case plan::kQIndex:
      case plan::kDOutIndex:
      case plan::kOutIndex:
        fill_random(bytes, p.spec.dtype);
        break;
      case plan::kLseIndex:
        fill_float(bytes, float(std::log(double(shape.seq_k)) + 0.5));
        break;
      case plan::kMaskIndex:
        if (p.spec.mask == spec::MaskKind::boolean) std::fill(bytes.begin(), bytes.end(), std::byte{1});
        break;  // additive: zeros, every key visible
      case plan::kAlibiIndex:
        fill_float(bytes, 0.0625f);
        break;
      case plan::kCuSeqlensQIndex:
        fill_int32(bytes, cumulative_lengths(lengths.q));
        break;
      case plan::kCuSeqlensKIndex:
        fill_int32(bytes, cumulative_lengths(lengths.k));
        break;
      case plan::kBlockTableIndex:
        fill_block_table(bytes, lengths.k, max_pages);
        break;
      case plan::kCacheSeqlensIndex:
        fill_int32(bytes, to_int32(lengths.k));
        break;
      case kForwardModScalars:
        fill_float(bytes, 1.0f);  // score_mod / mask_mod scalars; captured tensors stay zeros
        break;
      default:
        break;
    }
  }
  return tensors;
}

}  // namespace mfagen::profile
