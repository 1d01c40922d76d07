// Library::find / select: the selection rule of library.h. find() is the hot
// path: a scan over a small immutable table with integer comparisons, no
// allocation, no locks.
#include <algorithm>
#include <string>

#include "mfagen/library.h"

namespace mfagen {
namespace {

bool fits(const KernelEntry& k, const AttentionQuery& q) {
  const ForwardKernelInfo& i = k.info;
  if (q.kind == KernelKind::backward) {
    if (k.kind != KernelKind::backward) return false;
  } else if (k.kind == KernelKind::backward ||
             (k.kind == KernelKind::decode && q.shape.seq_q > kMaxDecodeQueries)) {
    return false;
  }
  return k.dtype == q.dtype && i.head_dim == q.head_dim && i.head_dim_v == q.head_dim_v && k.causal == q.causal &&
         i.mask == q.mask && i.window == q.window && i.softcap == q.softcap && i.alibi == q.alibi &&
         (i.gqa || q.shape.heads_q == q.shape.heads_kv) && (i.lse || !q.need_lse);
}

// Higher is more specific for this call.
int preference(const KernelEntry& k, const AttentionQuery& q) {
  int score = 0;
  if (k.kind == KernelKind::decode) score += 4;  // only fits seq_q <= 16
  if (!k.info.gqa) score += 2;                     // fits only heads_q == heads_kv: no group division
  if (!k.info.lse && !q.need_lse) score += 1;      // writes less
  return score;
}

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

const KernelEntry* Library::find(const AttentionQuery& query) const noexcept {
  const KernelEntry* best = nullptr;
  int best_score = -1;
  for (const KernelEntry& k : kernels_) {
    if (!fits(k, query)) continue;
    const int score = preference(k, query);
    if (score > best_score) best = &k, best_score = score;  // strict: ties keep manifest order
  }
  return best;
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
