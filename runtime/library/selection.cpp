// Library::find / select: the selection rule of library.h. find() is the hot
// path: one hash probe on the exact-match facts of the call, then the first
// fitting kernel of a short list presorted by preference; integer
// comparisons only, no allocation, no locks.
#include <algorithm>
#include <string>

#include "mfagen/library.h"

namespace mfagen {
namespace {

// How specific a kernel is; higher wins among the kernels that fit a call.
// A kernel only fits a call its restrictions allow (decode: seq_q <= 16; no
// gqa: heads_q == heads_kv; no lse: lse not needed), so for the kernels that
// fit, this static score is the rule of library.h.
int preference(const KernelEntry& k) {
  int score = 0;
  if (k.kind == KernelKind::decode) score += 4;  // only fits seq_q <= 16
  if (!k.info.gqa) score += 2;                     // fits only heads_q == heads_kv: no group division
  if (!k.info.lse) score += 1;                     // writes less
  return score;
}

// The facts that must match exactly, packed into 50 bits; kNoKey for values
// no kernel can have (head dims of 2^20 and more).
constexpr uint64_t kNoKey = ~uint64_t(0);
uint64_t exact_key(bool backward, ElementType dtype, uint64_t d, uint64_t dv, CausalMode causal, MaskInput mask,
                   bool window, bool softcap, bool alibi) {
  if (d >= (uint64_t(1) << 20) || dv >= (uint64_t(1) << 20)) return kNoKey;
  return uint64_t(backward) | (uint64_t(dtype) & 3) << 1 | (uint64_t(causal) & 3) << 3 | (uint64_t(mask) & 3) << 5 |
         uint64_t(window) << 7 | uint64_t(softcap) << 8 | uint64_t(alibi) << 9 | d << 10 | dv << 30;
}
uint64_t exact_key(const KernelEntry& k) {
  const ForwardKernelInfo& i = k.info;
  return exact_key(k.kind == KernelKind::backward, k.dtype, i.head_dim, i.head_dim_v, k.causal, i.mask, i.window,
                   i.softcap, i.alibi);
}
uint64_t exact_key(const AttentionQuery& q) {
  return exact_key(q.kind == KernelKind::backward, q.dtype, q.head_dim, q.head_dim_v, q.causal, q.mask, q.window,
                   q.softcap, q.alibi);
}
uint64_t slot_hash(uint64_t key, uint32_t shift) { return (key * 0x9E3779B97F4A7C15ull) >> shift; }

// How far a kernel is from the query, for "closest kernels" in errors.
int distance(const KernelEntry& k, const AttentionQuery& q) {
  const ForwardKernelInfo& i = k.info;
  return (k.dtype != q.dtype) + 2 * (i.head_dim != q.head_dim) + 2 * (i.head_dim_v != q.head_dim_v) +
         (k.causal != q.causal) + (i.mask != q.mask) + (i.window != q.window) + (i.softcap != q.softcap) +
         (i.alibi != q.alibi) + (!i.gqa && q.shape.heads_q != q.shape.heads_kv) + (!i.lse && q.need_lse) +
         2 * ((k.kind == KernelKind::backward) != (q.kind == KernelKind::backward));
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
  if (!i.lse) d += ", no lse";
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
  if (q.need_lse) d += ", lse";
  return d;
}

}  // namespace

void Library::build_index() {
  // Kernels grouped by exact key, each group most preferred first, ties in
  // manifest order (stable sort).
  std::vector<uint32_t> order(kernels_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<uint64_t> keys(kernels_.size());
  for (size_t i = 0; i < kernels_.size(); ++i) keys[i] = exact_key(kernels_[i]);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (keys[a] != keys[b]) return keys[a] < keys[b];
    return preference(kernels_[a]) > preference(kernels_[b]);
  });
  candidates_.clear();
  for (uint32_t i : order) {
    const KernelEntry& k = kernels_[i];
    candidates_.push_back({i, k.kind == KernelKind::decode, !k.info.gqa, !k.info.lse});
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
}

const KernelEntry* Library::find(const AttentionQuery& query) const noexcept {
  const uint64_t key = exact_key(query);
  if (key == kNoKey || slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t s = slot_hash(key, slot_shift_);; s = (s + 1) & mask) {
    const Slot& slot = slots_[s];
    if (slot.count == 0) return nullptr;
    if (slot.key != key) continue;
    // The key holds every exact-match fact; what is left are the
    // restrictions of the more specific kernels, checked most specific first.
    const bool few_queries = query.shape.seq_q <= kMaxDecodeQueries;
    const bool same_heads = query.shape.heads_q == query.shape.heads_kv;
    for (const Candidate* c = &candidates_[slot.begin], *end = c + slot.count; c != end; ++c)
      if ((!c->decode || few_queries) && (!c->no_gqa || same_heads) && (!c->no_lse || !query.need_lse))
        return &kernels_[c->kernel];
    return nullptr;
  }
}

const KernelEntry& Library::select(const AttentionQuery& query) const {
  if (const KernelEntry* k = find(query)) return *k;
  std::vector<const KernelEntry*> closest;
  for (const KernelEntry& k : kernels_) closest.push_back(&k);
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
  return k == KernelKind::forward ? "forward" : k == KernelKind::decode ? "decode" : "backward";
}
std::string_view to_string(CausalMode c) {
  return c == CausalMode::none ? "none" : c == CausalMode::top_left ? "top_left" : "bottom_right";
}

}  // namespace mfagen
