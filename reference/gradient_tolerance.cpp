#include "gradient_tolerance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace mfagen::reference {

ToleranceVerdict check_gradient(std::span<const float> kernel, const std::vector<double>& reference,
                                const std::vector<double>& naive, ElementType type, std::string_view name,
                                std::array<uint64_t, 4> shape) {
  ToleranceVerdict v;
  const ElementTolerance tol = element_tolerance(type);
  double largest = 1;
  for (double x : reference) largest = std::max(largest, std::abs(x));
  for (size_t i = 0; i < naive.size() && i < reference.size(); ++i)
    v.naive_error = std::max(v.naive_error, std::isfinite(naive[i]) ? std::abs(naive[i] - reference[i]) : INFINITY);
  v.bound = 3 * v.naive_error + 1e-5;
  if (kernel.size() != reference.size()) {
    v.detail = fmt::format("{}: {} values, expected {}", name, kernel.size(), reference.size());
    return v;
  }
  size_t worst = 0, bad_elements = 0, first_bad = 0;
  for (size_t i = 0; i < kernel.size(); ++i) {
    const double err = std::isfinite(kernel[i]) ? std::abs(double(kernel[i]) - reference[i]) : INFINITY;
    if (err > v.max_abs_error || !std::isfinite(err)) v.max_abs_error = err, worst = i;
    if (!(err <= tol.atol * largest + tol.rtol * std::abs(reference[i]))) {
      if (bad_elements++ == 0) first_bad = i;
    }
  }
  auto where = [&](size_t i) {
    const uint64_t d = i % shape[3], row = i / shape[3];
    return fmt::format("(b={},h={},i={},d={})", row / shape[2] / shape[1], row / shape[2] % shape[1], row % shape[2], d);
  };
  v.ok = v.max_abs_error <= v.bound && bad_elements == 0;
  v.detail = fmt::format("{}: worst {} kernel {} reference {}", name, where(worst),
                         kernel.empty() ? 0.0 : double(kernel[worst]), reference.empty() ? 0.0 : reference[worst]);
  if (v.max_abs_error > v.bound)
    v.detail += fmt::format("; max error {:.3g} over 3 x naive {:.3g} + 1e-5", v.max_abs_error, v.naive_error);
  if (bad_elements)
    v.detail += fmt::format("; {} elements outside atol {:.3g} + rtol {:.3g} |ref|, first {}", bad_elements,
                            tol.atol * largest, tol.rtol, where(first_bad));
  return v;
}

}  // namespace mfagen::reference
