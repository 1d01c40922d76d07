// Library::find / select: the selection rule of library.h. find() is the hot
// path: one hash probe on the exact-match facts of the call, then the first
// fitting kernel of a short list presorted by preference; integer
// comparisons only (the device's capabilities against each candidate's
// requirements among them), no allocation, no locks. A miss is reported to
// the call trace (mfagen/call_trace.h) with its reason when the trace is on.
#include <algorithm>
#include <string>
#include <vector>

#include "mfagen/call_trace.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

// How specific a kernel is; higher wins among the kernels that fit a call.
// A kernel only fits a call its restrictions allow (decode: seq_q <= 16; no
// gqa: heads_q == heads_kv; no lse: lse not needed; TensorOps: a device that
// supports them), so for the kernels that fit, this static score is the rule
// of library.h.
int preference(const KernelEntry& k) {
  int score = 0;
  if (k.kind == KernelKind::decode) score += 8;  // only fits seq_q <= 16
  if (!k.info.gqa) score += 4;                     // fits only heads_q == heads_kv: no group division
  if (!k.info.lse) score += 2;                     // writes less
  if (k.requirements.tensor_ops) score += 1;       // matmul2d on the matrix units of the devices it is for
  return score;
}

// The facts that must match exactly, packed into 56 bits; kNoKey for values
// no kernel can have (head dims of 2^20 and more).
constexpr uint64_t kNoKey = ~uint64_t(0);
inline uint64_t exact_key(bool backward, ElementType dtype, uint64_t d, uint64_t dv, CausalMode causal, MaskInput mask,
                          bool window, bool softcap, bool alibi, bool sinks, bool varlen,
                          bool paged, KvFormat kv, bool dropout, bool mods) {
  if (d >= (uint64_t(1) << 20) || dv >= (uint64_t(1) << 20)) return kNoKey;
  return uint64_t(backward) | (uint64_t(dtype) & 3) << 1 | (uint64_t(causal) & 3) << 3 | (uint64_t(mask) & 3) << 5 |
         uint64_t(window) << 7 | uint64_t(softcap) << 8 | uint64_t(alibi) << 9 | d << 10 | dv << 30 | uint64_t(sinks) << 50 | uint64_t(varlen) << 51 |
         uint64_t(paged) << 52 | (uint64_t(kv) & 3) << 53 | uint64_t(dropout) << 55 | uint64_t(mods) << 56;
}
uint64_t exact_key(const KernelEntry& k) {
  const ForwardKernelInfo& i = k.info;
  return exact_key(k.kind == KernelKind::backward, k.dtype, i.head_dim, i.head_dim_v, k.causal, i.mask, i.window,
                   i.softcap, i.alibi, i.sinks, i.varlen, i.paged, i.kv_format, i.dropout, i.mods_id != 0);
}
inline uint64_t exact_key(const AttentionQuery& q) {  // find()'s hot path
  return exact_key(q.kind == KernelKind::backward, q.dtype, q.head_dim, q.head_dim_v, q.causal, q.mask, q.window,
                   q.softcap, q.alibi, q.sinks, q.varlen, q.paged, q.kv_format, q.dropout, q.mods_id != 0);
}
uint64_t slot_hash(uint64_t key, uint32_t shift) { return (key * 0x9E3779B97F4A7C15ull) >> shift; }

// Partial keys for miss reasons: an exact key with the facts after a point
// of the rule masked off, tagged above the key's 56 bits so partial keys of
// different depths never compare equal.
struct PartialKey {
  uint64_t facts, tag;
  uint64_t of(uint64_t exact) const { return (exact & facts) | tag; }
};
constexpr uint64_t kDtypeAndDims = uint64_t(3) << 1 | ((uint64_t(1) << 40) - 1) << 10;
constexpr PartialKey kDimsKey{kDtypeAndDims, uint64_t(1) << 60};
constexpr PartialKey kKindDimsKey{kDtypeAndDims | 1, uint64_t(2) << 60};
constexpr PartialKey kKindDimsCausalKey{kDtypeAndDims | 1 | uint64_t(3) << 3, uint64_t(3) << 60};

// How far a kernel is from the query, for "closest kernels" in errors.
int distance(const KernelEntry& k, const AttentionQuery& q) {
  const ForwardKernelInfo& i = k.info;
  return (k.dtype != q.dtype) + 2 * (i.head_dim != q.head_dim) + 2 * (i.head_dim_v != q.head_dim_v) +
         (k.causal != q.causal) + (i.mask != q.mask) + (i.window != q.window) + (i.softcap != q.softcap) +
         (i.alibi != q.alibi) + (i.sinks != q.sinks) + (i.varlen != q.varlen) + (i.paged != q.paged) + (i.kv_format != q.kv_format) + (i.dropout != q.dropout) + 2 * (i.mods_id != q.mods_id) +
         (!i.gqa && q.shape.heads_q != q.shape.heads_kv) + (!i.lse && q.need_lse) +
         2 * ((k.kind == KernelKind::backward) != (q.kind == KernelKind::backward));
}

// Whether a kernel of the query's slot (its exact key matches) fits the
// query, capabilities aside.
bool fits_restrictions(const KernelEntry& k, const AttentionQuery& q) {
  return (k.kind != KernelKind::decode || q.shape.seq_q <= kMaxDecodeQueries) &&
         (k.info.gqa || q.shape.heads_q == q.shape.heads_kv) && (k.info.lse || !q.need_lse) &&
         k.info.mods_id == q.mods_id;
}

std::string describe(const KernelRequirements& r) {
  return "Metal " + std::string(to_string(r.metal)) + ", GPU family " + std::string(to_string(r.gpu_family)) +
         (r.tensor_ops ? " and TensorOps" : "");
}

std::string describe(const DeviceCapabilities& d) {
  return "Metal " + std::string(to_string(d.metal)) + ", GPU family " + std::string(to_string(d.gpu_family)) +
         (d.tensor_ops ? " and TensorOps" : ", no TensorOps");
}

// What of `r` the device lacks, e.g. "TensorOps" or "GPU family apple10 and TensorOps".
std::string lacking(const KernelRequirements& r, const DeviceCapabilities& d) {
  std::vector<std::string> parts;
  if (d.metal < r.metal) parts.push_back("Metal " + std::string(to_string(r.metal)));
  if (d.gpu_family < r.gpu_family) parts.push_back("GPU family " + std::string(to_string(r.gpu_family)));
  if (r.tensor_ops && !d.tensor_ops) parts.push_back("TensorOps");
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return text;
}

std::string hex_id(uint64_t id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, id >>= 4) s[size_t(i)] = kDigits[id & 15];
  return s;
}

std::string describe(const KernelEntry& k) {
  const ForwardKernelInfo& i = k.info;
  std::string d = std::string(k.name) + " (" + std::string(to_string(k.kind)) + " " +
                  std::string(to_string(k.dtype)) + ", D " + std::to_string(i.head_dim) + ", Dv " +
                  std::to_string(i.head_dim_v) + ", causal " + std::string(to_string(k.causal));
  if (!i.gqa) d += ", no gqa";
  if (i.mask != MaskInput::none) d += i.mask == MaskInput::boolean ? ", bool mask" : ", additive mask";
  if (i.window) d += ", window";
  if (i.softcap) d += ", softcap";
  if (i.alibi) d += ", alibi";
  if (i.sinks) d += ", sinks";
  if (i.varlen) d += ", varlen";
  if (i.paged) d += ", paged";
  if (i.kv_format != KvFormat::elements) d += std::string(", kv ") + std::string(to_string(i.kv_format));
  if (i.dropout) d += ", dropout";
  if (i.mods_id) d += ", score_mod/mask_mod " + hex_id(i.mods_id);
  if (!i.lse) d += ", no lse";
  if (k.requirements != KernelRequirements{}) d += ", requires " + describe(k.requirements);
  return d + ")";
}

std::string describe(const AttentionQuery& q) {
  std::string d = std::string(to_string(q.kind)) + " " + std::string(to_string(q.dtype)) + ", D " +
                  std::to_string(q.head_dim) + ", Dv " + std::to_string(q.head_dim_v) + ", causal " +
                  std::string(to_string(q.causal)) + ", " + std::to_string(q.shape.heads_q) + " q heads over " +
                  std::to_string(q.shape.heads_kv) + ", seq_q " + std::to_string(q.shape.seq_q);
  if (q.mask != MaskInput::none) d += q.mask == MaskInput::boolean ? ", bool mask" : ", additive mask";
  if (q.window) d += ", window";
  if (q.softcap) d += ", softcap";
  if (q.alibi) d += ", alibi";
  if (q.sinks) d += ", sinks";
  if (q.varlen) d += ", varlen";
  if (q.paged) d += ", paged";
  if (q.kv_format != KvFormat::elements) d += std::string(", kv ") + std::string(to_string(q.kv_format));
  if (q.dropout) d += ", dropout";
  if (q.mods_id) d += ", score_mod/mask_mod " + hex_id(q.mods_id);
  if (q.need_lse) d += ", lse";
  return d;
}

}  // namespace

void Library::build_index() {
  // Kernels grouped by exact key, each group most preferred first, ties in
  // manifest order (stable sort).
  // Only attention kernels serve calls: cache_append kernels are not indexed.
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < kernels_.size(); ++i)
    if (kernels_[i].kind != KernelKind::cache_append) order.push_back(i);
  std::vector<uint64_t> keys(kernels_.size());
  for (size_t i = 0; i < kernels_.size(); ++i) keys[i] = exact_key(kernels_[i]);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (keys[a] != keys[b]) return keys[a] < keys[b];
    return preference(kernels_[a]) > preference(kernels_[b]);
  });
  candidates_.clear();
  for (uint32_t i : order) {
    const KernelEntry& k = kernels_[i];
    candidates_.push_back({i, k.kind == KernelKind::decode, !k.info.gqa, !k.info.lse, k.requirements, k.info.mods_id});
  }
  size_t groups = 0;
  for (size_t i = 0; i < order.size(); ++i) groups += i == 0 || keys[order[i]] != keys[order[i - 1]];
  uint32_t bits = 1;
  while ((size_t(1) << bits) < 2 * groups) ++bits;  // at most half full: short probes
  slots_.assign(size_t(1) << bits, Slot{});
  slot_shift_ = 64 - bits;
  const size_t mask = slots_.size() - 1;
  for (size_t i = 0; i < order.size();) {
    size_t end = i;
    while (end < order.size() && keys[order[end]] == keys[order[i]]) ++end;
    size_t s = slot_hash(keys[order[i]], slot_shift_);
    while (slots_[s].count != 0) s = (s + 1) & mask;
    slots_[s] = {keys[order[i]], uint32_t(i), uint32_t(end - i)};
    i = end;
  }
  partial_keys_.clear();
  for (uint32_t i : order)
    for (const PartialKey& p : {kDimsKey, kKindDimsKey, kKindDimsCausalKey}) partial_keys_.push_back(p.of(keys[i]));
  std::sort(partial_keys_.begin(), partial_keys_.end());
  partial_keys_.erase(std::unique(partial_keys_.begin(), partial_keys_.end()), partial_keys_.end());
}

// inline: both helpers are find()'s hot path (and used only in this file);
// out of line, -fPIC would keep them as calls.
inline const Library::Slot* Library::slot_for(uint64_t key) const noexcept {
  if (key == kNoKey || slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t s = slot_hash(key, slot_shift_);; s = (s + 1) & mask) {
    if (slots_[s].count == 0) return nullptr;
    if (slots_[s].key == key) return &slots_[s];
  }
}

inline const KernelEntry* Library::find_in_index(const AttentionQuery& query,
                                                  const DeviceCapabilities& device) const noexcept {
  const Slot* slot = slot_for(exact_key(query));
  if (!slot) return nullptr;
  // The key holds every exact-match fact; what is left are the restrictions
  // of the more specific kernels, checked most specific first, and what each
  // kernel needs of the device (a TensorOps kernel is skipped on a device
  // without them, and the next, its simdgroup_matrix twin, serves the call).
  const bool few_queries = query.shape.seq_q <= kMaxDecodeQueries;
  const bool same_heads = query.shape.heads_q == query.shape.heads_kv;
  for (const Candidate* c = &candidates_[slot->begin], *end = c + slot->count; c != end; ++c)
    if ((!c->decode || few_queries) && (!c->no_gqa || same_heads) && (!c->no_lse || !query.need_lse) &&
        c->mods_id == query.mods_id && device.satisfies(c->requirements))
      return &kernels_[c->kernel];
  return nullptr;
}

const KernelEntry* Library::find(const AttentionQuery& query, const DeviceCapabilities& device) const noexcept {
  if (const KernelEntry* kernel = find_in_index(query, device)) return kernel;
  if (call_trace_enabled()) trace_miss(query, miss_reason(query, device));  // only misses pay for the reason
  return nullptr;
}

MissReason Library::miss_reason(const AttentionQuery& query, const DeviceCapabilities& device) const noexcept {
  const uint64_t key = exact_key(query);
  auto known = [&](const PartialKey& p) {
    return key != kNoKey && std::binary_search(partial_keys_.begin(), partial_keys_.end(), p.of(key));
  };
  if (!known(kDimsKey)) return MissReason::dtype_or_head_dims;
  if (!known(kKindDimsKey))
    return query.kind == KernelKind::backward ? MissReason::no_backward_kernel : MissReason::only_backward_kernels;
  if (!known(kKindDimsCausalKey)) return MissReason::causal_mode;
  const Slot* slot = slot_for(key);
  if (!slot) return MissReason::features;
  // Every kernel of the slot fails a restriction: report the first failed
  // restriction of the kernel that fails the fewest (the closest one).
  constexpr unsigned kDecode = 1, kGqa = 2, kLse = 4, kDevice = 8;
  unsigned closest = kDecode | kGqa | kLse | kDevice;
  bool same_mods = false;
  for (const Candidate* c = &candidates_[slot->begin], *end = c + slot->count; c != end; ++c)
    same_mods = same_mods || c->mods_id == query.mods_id;
  if (!same_mods) return MissReason::features;  // kernels with other score_mod/mask_mod expressions
  for (const Candidate* c = &candidates_[slot->begin], *end = c + slot->count; c != end; ++c) {
    if (c->mods_id != query.mods_id) continue;
    const unsigned failed = (c->decode && query.shape.seq_q > kMaxDecodeQueries ? kDecode : 0) |
                            (c->no_gqa && query.shape.heads_q != query.shape.heads_kv ? kGqa : 0) |
                            (c->no_lse && query.need_lse ? kLse : 0) |
                            (!device.satisfies(c->requirements) ? kDevice : 0);
    if (__builtin_popcount(failed) < __builtin_popcount(closest)) closest = failed;
  }
  return closest & kDecode ? MissReason::decode_only
         : closest & kGqa  ? MissReason::needs_gqa
         : closest & kLse  ? MissReason::needs_lse
                           : MissReason::device_capabilities;
}

const KernelEntry& Library::select(const AttentionQuery& query, const DeviceCapabilities& device) const {
  if (const KernelEntry* k = find(query, device)) return *k;
  // Kernels that fit the call but need more than the device offers: say
  // which, what they require and what the device lacks.
  if (const Slot* slot = slot_for(exact_key(query))) {
    std::string refused;
    for (const Candidate* c = &candidates_[slot->begin], *end = c + slot->count; c != end; ++c) {
      const KernelEntry& k = kernels_[c->kernel];
      if (fits_restrictions(k, query))
        refused += "\n  " + k.name + " requires " + describe(k.requirements) + "; the device lacks " +
                   lacking(k.requirements, device);
    }
    if (!refused.empty())
      throw SelectionError("no kernel for " + describe(query) + " on a device with " + describe(device) +
                           ": the kernels that fit need more of the device (a backend's capabilities() says what it "
                           "offers):" + refused);
  }
  std::vector<const KernelEntry*> closest;
  for (const KernelEntry& k : kernels_)
    if (k.kind != KernelKind::cache_append) closest.push_back(&k);
  std::stable_sort(closest.begin(), closest.end(), [&](const KernelEntry* a, const KernelEntry* b) {
    return distance(*a, query) < distance(*b, query);
  });
  std::string message = "no kernel for " + describe(query);
  if (closest.empty()) message += "; the library has no kernels";
  else message += "; closest:";
  for (size_t i = 0; i < closest.size() && i < 3; ++i) message += "\n  " + describe(*closest[i]);
  throw SelectionError(message);
}

std::string_view to_string(ElementType t) {
  return t == ElementType::float16 ? "float16" : t == ElementType::bfloat16 ? "bfloat16" : "float32";
}
std::string_view to_string(KernelKind k) {
  return k == KernelKind::forward    ? "forward"
         : k == KernelKind::decode   ? "decode"
         : k == KernelKind::backward ? "backward"
                                     : "cache_append";
}
std::string_view to_string(CausalMode c) {
  return c == CausalMode::none ? "none" : c == CausalMode::top_left ? "top_left" : "bottom_right";
}
std::string_view to_string(MissReason r) {
  switch (r) {
    case MissReason::dtype_or_head_dims: return "no kernel for this dtype, D and Dv";
    case MissReason::no_backward_kernel: return "no backward kernel for this dtype, D and Dv";
    case MissReason::only_backward_kernels: return "only backward kernels for this dtype, D and Dv";
    case MissReason::causal_mode: return "no kernel with this causal mode";
    case MissReason::features:
      return "no kernel with this mask, window, softcap, alibi, sinks, layout, kv cache, kv dtype, dropout and "
             "score_mod/mask_mod";
    case MissReason::decode_only: return "only decode kernels, and seq_q > 16";
    case MissReason::needs_gqa: return "only kernels without gqa, and heads_q != heads_kv";
    case MissReason::needs_lse: return "only kernels without lse, and the call needs lse";
    case MissReason::device_capabilities:
      return "only kernels that require what the device lacks (TensorOps, GPU family or Metal version)";
  }
  return "unknown";
}

}  // namespace mfagen
