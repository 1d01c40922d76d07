// One case of `mfagen selftest`: a kernel as a spec asks for it, one call of
// it (shape and runtime values) and the seed of its inputs. The kernel runs
// through a backend and its results are judged against the float64
// reference (DESIGN.md section 3).
#pragma once

#include <functional>

#include <array>
#include <cstdint>
#include <string>

#include "mfagen/forward_dispatch.h"
#include "spec/kernel_spec.h"

namespace mfagen::selftest {

struct SelftestCase {
  // Unique and stable: what --filter matches and the reports show, e.g.
  // "forward/fp16/d64/bottom_right" (fp16, bf16, fp32, so that "fp16" does
  // not also match bfloat16 cases).
  std::string name;
  // Kind (forward, decode, backward), dtype, head dims, causal mode, gqa,
  // features, lse; `name` is the derived kernel name. A backward case runs
  // the forward kernel of the same features first, for out and lse.
  spec::KernelSpec kernel;
  AttentionShape shape;
  double scale = 0;                            // 0: 1/sqrt(D)
  double softcap = 0;                          // softcap kernels: the cap
  int64_t window_left = -1, window_right = -1;  // window kernels; -1 unbounded
  bool mask_per_head = false;                  // mask kernels: (B, Hq, Sq, Sk); else (B, 1, Sq, Sk)
  bool alibi_per_batch = false;                // ALiBi kernels: slopes (B, Hq) instead of (Hq,)
  uint32_t splits = 0;                         // decode: key splits; 0 = chosen from the shape
  uint64_t seed = 1;
  bool quick = false;                          // also in the --quick matrix
  // score_mod / mask_mod kernels (kernel.mods): the same functions written
  // plainly for the float64 reference (b, h, q_idx, kv_idx as it passes them).
  std::function<double(double, uint64_t, uint64_t, uint64_t, uint64_t)> reference_score_mod;
  std::function<bool(uint64_t, uint64_t, uint64_t, uint64_t)> reference_mask_mod;

  // The call's shape and runtime values in words, e.g.
  // "B 1, Hq 4, Hkv 2, Sq 40, Sk 72, softcap 5".
  std::string describe_call() const;
};

// fp8_e4m3 cases: the scales of the stored k and v (distinct, so that a
// kernel that swaps them fails).
inline constexpr double kFp8KScale = 0.0625, kFp8VScale = 0.046875;

// The call as the runtime takes it: contiguous BHSD strides (k and v in
// storage units of a quantized cache) and the case's runtime values (mask
// strides for the case's mask extents).
ForwardCall forward_call(const SelftestCase& c);

// The mask's extents over (B, Hq, Sq, Sk): 1 where it broadcasts.
std::array<uint64_t, 4> mask_extents(const SelftestCase& c);

}  // namespace mfagen::selftest
