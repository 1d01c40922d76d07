#include "selftest/selftest_case.h"

#include <fmt/format.h>

#include "plan/dispatch_info.h"
#include "selftest/cache_append_case.h"

namespace mfagen::selftest {

std::string SelftestCase::describe_call() const {
  if (kernel.kind == spec::Kind::cache_append) return describe_append_call(*this);
  std::string d = fmt::format("B {}, Hq {}, Hkv {}, Sq {}, Sk {}", shape.batch, shape.heads_q, shape.heads_kv,
                              shape.seq_q, shape.seq_k);
  if (scale > 0) d += fmt::format(", scale {}", scale);
  if (kernel.softcap) d += fmt::format(", softcap {}", softcap);
  if (kernel.window) d += fmt::format(", window ({}, {})", window_left, window_right);
  if (kernel.mask != spec::MaskKind::none)
    d += fmt::format(", {} mask {}", spec::to_string(kernel.mask),
                     mask_per_head ? "(B, Hq, Sq, Sk)" : "(B, 1, Sq, Sk)");
  if (kernel.alibi) d += alibi_per_batch ? ", ALiBi slopes (B, Hq)" : ", ALiBi slopes (Hq)";
  if (kernel.sinks) d += ", sink logits (Hq)";
  if (kernel.kind == spec::Kind::decode) d += splits ? fmt::format(", {} key splits", splits) : ", key splits auto";
  return d;
}

std::array<uint64_t, 4> mask_extents(const SelftestCase& c) {
  return {c.shape.batch, c.mask_per_head ? c.shape.heads_q : 1, c.shape.seq_q, c.shape.seq_k};
}

ForwardCall forward_call(const SelftestCase& c) {
  ForwardCall call;
  call.shape = c.shape;
  call.strides = contiguous_bhsd(c.shape, c.kernel.head_dim, c.kernel.head_dim_v, plan::kv_format(c.kernel));
  if (c.kernel.kv_dtype == spec::KvDType::fp8_e4m3) call.k_scale = kFp8KScale, call.v_scale = kFp8VScale;
  call.scale = c.scale;
  if (c.kernel.softcap) call.softcap = c.softcap;
  if (c.kernel.window) call.window_left = c.window_left, call.window_right = c.window_right;
  if (c.kernel.mask != spec::MaskKind::none) call.mask_strides = broadcast_strides(mask_extents(c));
  call.alibi_per_batch = c.alibi_per_batch;
  call.splits = c.splits;
  return call;
}

}  // namespace mfagen::selftest
