#include "tolerance.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

namespace mfagen::reference {

namespace {

constexpr double kNoYardstick = std::numeric_limits<double>::infinity();

// "(b=0,h=1,i=2,d=5)" for a flat index into a (B,Hq,Sq,inner) tensor; inner = 0
// means a (B,Hq,Sq) tensor. Without a problem, just the flat index.
std::string position(const AttentionProblem* p, uint64_t flat, uint64_t inner) {
  std::ostringstream s;
  if (p == nullptr) {
    s << "[" << flat << "]";
    return s.str();
  }
  uint64_t d = 0;
  if (inner > 0) {
    d = flat % inner;
    flat /= inner;
  }
  uint64_t i = flat % p->seq_q;
  flat /= p->seq_q;
  uint64_t h = flat % p->heads_q;
  uint64_t b = flat / p->heads_q;
  s << "(b=" << b << ",h=" << h << ",i=" << i;
  if (inner > 0) s << ",d=" << d;
  s << ")";
  return s.str();
}

// The first offending element of one rule, and how many elements broke it.
struct RuleBreak {
  uint64_t count = 0;
  uint64_t index = 0;
  void add(uint64_t i) {
    if (count++ == 0) index = i;
  }
};

}  // namespace

ElementTolerance element_tolerance(ElementType type) {
  if (type == ElementType::float32) return {5e-6, 5e-5};
  return {5e-3, 5e-2};
}

ToleranceVerdict check_output(std::span<const float> kernel_out, const AttentionResult& reference,
                              const AttentionResult& naive, ElementType type, const AttentionProblem& problem) {
  ToleranceVerdict verdict;
  std::ostringstream detail;
  detail.precision(9);
  const uint64_t dv = problem.head_dim_v;
  const uint64_t expected = problem.batch * problem.heads_q * problem.seq_q * dv;
  if (kernel_out.size() != expected || reference.out.size() != expected || naive.out.size() != expected ||
      reference.lse.size() * dv != expected) {
    detail << "size mismatch: kernel out " << kernel_out.size() << ", reference out " << reference.out.size()
           << ", naive out " << naive.out.size() << ", reference lse " << reference.lse.size() << "; the problem needs "
           << expected << " output values";
    verdict.max_abs_error = kNoYardstick;
    verdict.detail = detail.str();
    return verdict;
  }

  // The yardstick: how far the naive in-dtype computation lands from the reference.
  for (uint64_t n = 0; n < expected; ++n) {
    double error = std::fabs(naive.out[n] - reference.out[n]);
    if (!std::isfinite(error)) error = kNoYardstick;  // NaN/Inf in naive: no usable yardstick
    verdict.naive_error = std::max(verdict.naive_error, error);
  }
  verdict.bound = 2 * verdict.naive_error + 1e-5;

  const ElementTolerance tolerance = element_tolerance(type);
  RuleBreak non_finite, masked_nonzero, outside_element_tolerance;
  uint64_t worst = 0;           // element with the largest absolute error
  uint64_t worst_relative = 0;  // element with the largest error / allowed
  double worst_ratio = -1;
  for (uint64_t n = 0; n < expected; ++n) {
    const double kernel = kernel_out[n];
    const double ref = reference.out[n];
    if (!std::isfinite(kernel)) {
      non_finite.add(n);
      verdict.max_abs_error = kNoYardstick;
      worst = n;
      continue;
    }
    if (reference.lse[n / dv] == -kNoYardstick && kernel != 0) masked_nonzero.add(n);
    const double error = std::fabs(kernel - ref);
    if (error > verdict.max_abs_error) {
      verdict.max_abs_error = error;
      worst = n;
    }
    const double allowed = tolerance.atol + tolerance.rtol * std::fabs(ref);
    if (error > allowed) outside_element_tolerance.add(n);
    if (error / allowed > worst_ratio) {
      worst_ratio = error / allowed;
      worst_relative = n;
    }
  }
  const bool within_bound = verdict.max_abs_error <= verdict.bound;
  verdict.ok = non_finite.count == 0 && masked_nonzero.count == 0 && outside_element_tolerance.count == 0 && within_bound;

  auto element = [&](uint64_t n) {
    std::ostringstream s;
    s.precision(9);
    s << position(&problem, n, dv) << ": kernel " << kernel_out[n] << ", reference " << reference.out[n];
    return s.str();
  };
  detail << to_string(type) << " output (B=" << problem.batch << " Hq=" << problem.heads_q << " Sq=" << problem.seq_q
         << " Dv=" << dv << "): " << (verdict.ok ? "ok" : "FAILED") << "\n";
  detail << "  max abs error " << verdict.max_abs_error;
  if (expected > 0) detail << " at " << element(worst);
  detail << "; bound 2 x naive " << verdict.naive_error << " + 1e-5 = " << verdict.bound
         << (within_bound ? "" : "  <- exceeded") << "\n";
  if (outside_element_tolerance.count > 0) {
    detail << "  " << outside_element_tolerance.count << " element(s) outside atol " << tolerance.atol << " + rtol "
           << tolerance.rtol << " * |ref|; first at " << element(outside_element_tolerance.index) << "\n";
  }
  if (worst_ratio >= 0) {
    detail << "  worst error / (atol + rtol * |ref|) = " << worst_ratio << " at " << element(worst_relative) << "\n";
  }
  if (non_finite.count > 0) {
    detail << "  " << non_finite.count << " NaN/Inf element(s) in the kernel output; first at "
           << element(non_finite.index) << "\n";
  }
  if (masked_nonzero.count > 0) {
    detail << "  " << masked_nonzero.count
           << " element(s) nonzero in rows without a visible key (must be exactly 0); first at "
           << element(masked_nonzero.index) << "\n";
  }
  verdict.detail = detail.str();
  return verdict;
}

namespace {

ToleranceVerdict check_lse_impl(std::span<const float> kernel_lse, const AttentionResult& reference,
                                const AttentionProblem* problem) {
  ToleranceVerdict verdict;
  std::ostringstream detail;
  detail.precision(9);
  const uint64_t rows = reference.lse.size();
  if (kernel_lse.size() != rows ||
      (problem != nullptr && rows != problem->batch * problem->heads_q * problem->seq_q)) {
    detail << "size mismatch: kernel lse " << kernel_lse.size() << ", reference lse " << rows;
    verdict.max_abs_error = kNoYardstick;
    verdict.detail = detail.str();
    return verdict;
  }

  RuleBreak masked_wrong, non_finite, outside;
  uint64_t worst = 0;
  double worst_ratio = -1;
  for (uint64_t n = 0; n < rows; ++n) {
    const double kernel = kernel_lse[n];
    const double ref = reference.lse[n];
    if (ref == -kNoYardstick) {
      // A row without visible keys must say so exactly.
      if (kernel != -kNoYardstick) masked_wrong.add(n);
      continue;
    }
    if (!std::isfinite(kernel)) {
      non_finite.add(n);
      verdict.max_abs_error = kNoYardstick;
      continue;
    }
    const double error = std::fabs(kernel - ref);
    const double allowed = 1e-5 * (1 + std::fabs(ref));
    verdict.max_abs_error = std::max(verdict.max_abs_error, error);
    if (error > allowed) outside.add(n);
    if (error / allowed > worst_ratio) {
      worst_ratio = error / allowed;
      worst = n;
      verdict.bound = allowed;
    }
  }
  verdict.ok = masked_wrong.count == 0 && non_finite.count == 0 && outside.count == 0;

  auto element = [&](uint64_t n) {
    std::ostringstream s;
    s.precision(9);
    s << position(problem, n, 0) << ": kernel " << kernel_lse[n] << ", reference " << reference.lse[n];
    return s.str();
  };
  detail << "lse (" << rows << " rows): " << (verdict.ok ? "ok" : "FAILED") << "\n";
  if (worst_ratio >= 0) {
    detail << "  worst error / (1e-5 * (1 + |ref|)) = " << worst_ratio << " at " << element(worst) << "\n";
  }
  if (outside.count > 0) {
    detail << "  " << outside.count << " row(s) outside 1e-5 * (1 + |ref|); first at " << element(outside.index)
           << "\n";
  }
  if (non_finite.count > 0) {
    detail << "  " << non_finite.count << " NaN/Inf row(s) where the reference is finite; first at "
           << element(non_finite.index) << "\n";
  }
  if (masked_wrong.count > 0) {
    detail << "  " << masked_wrong.count << " row(s) without a visible key not exactly -inf; first at "
           << element(masked_wrong.index) << "\n";
  }
  verdict.detail = detail.str();
  return verdict;
}

}  // namespace

ToleranceVerdict check_lse(std::span<const float> kernel_lse, const AttentionResult& reference) {
  return check_lse_impl(kernel_lse, reference, nullptr);
}

ToleranceVerdict check_lse(std::span<const float> kernel_lse, const AttentionResult& reference,
                           const AttentionProblem& problem) {
  return check_lse_impl(kernel_lse, reference, &problem);
}

}  // namespace mfagen::reference
