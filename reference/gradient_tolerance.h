// The tolerance rule of DESIGN.md section 3 for gradients: at most 3x the
// error of the same math done naively in the input dtype, +1e-5 absolute,
// and every element within atol + rtol * |ref| (float32 5e-6 / 5e-5, 16-bit
// types 5e-3 / 5e-2). Gradients are sums over a whole sequence and can be
// large, so atol is scaled by max(1, max |ref|) of the tensor.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dtype_rounding.h"
#include "tolerance.h"

namespace mfagen::reference {

// `kernel` and `reference`/`naive` are one gradient tensor of `shape`
// (B, H, S, D), e.g. dq (B, Hq, Sq, D). Fails on any NaN/Inf in the kernel
// (its error counts as infinite), or a size mismatch. verdict.bound is
// 3 * naive_error + 1e-5; verdict.detail names the gradient (`name`), the
// worst element as (b,h,i,d) with kernel and reference values, and each rule
// that failed with its first offending element.
ToleranceVerdict check_gradient(std::span<const float> kernel, const std::vector<double>& reference,
                                const std::vector<double>& naive, ElementType type, std::string_view name,
                                std::array<uint64_t, 4> shape);

}  // namespace mfagen::reference
