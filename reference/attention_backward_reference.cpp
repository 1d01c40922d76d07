#include "attention_backward_reference.h"

#include <cmath>
#include <functional>
#include <stdexcept>

#include "attention_reference.h"

namespace mfagen::reference {
namespace {

using Round = std::function<double(double)>;

// One implementation for both variants: `r` rounds the result of every
// operation (identity for float64). `forward` holds out and lse computed
// with the same rounding.
AttentionGradients backward(const AttentionProblem& p, const std::vector<double>& d_out, const AttentionResult& forward,
                            const Round& r) {
  validate(p);
  if (d_out.size() != p.batch * p.heads_q * p.seq_q * p.head_dim_v)
    throw std::invalid_argument("attention backward: dO does not have the shape of out");
  const uint64_t D = p.head_dim, Dv = p.head_dim_v, group = p.heads_q / p.heads_kv;
  const double scale = r(effective_scale(p));
  const double cap = r(p.softcap);
  auto qi = [&](uint64_t b, uint64_t h, uint64_t i) { return ((b * p.heads_q + h) * p.seq_q + i); };
  auto ki = [&](uint64_t b, uint64_t hk, uint64_t j) { return ((b * p.heads_kv + hk) * p.seq_k + j); };
  auto mi = [&](uint64_t b, uint64_t h, uint64_t i, uint64_t j) {
    const auto& s = p.mask_shape;
    return (((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : h)) * s[2] + (s[2] == 1 ? 0 : i)) * s[3] +
           (s[3] == 1 ? 0 : j);
  };

  AttentionGradients g;
  g.dq.assign(p.q.size(), 0.0);
  g.dk.assign(p.k.size(), 0.0);
  g.dv.assign(p.v.size(), 0.0);
  g.d_sinks.assign(p.sinks.size(), 0.0);
  const int64_t offset = query_offset(p);
  for (uint64_t b = 0; b < p.batch; ++b)
    for (uint64_t h = 0; h < p.heads_q; ++h) {
      const uint64_t hk = h / group;
      const double slope =
          p.alibi_slopes.empty() ? 0 : r(p.alibi_slopes.size() == p.heads_q ? p.alibi_slopes[h]
                                                                             : p.alibi_slopes[b * p.heads_q + h]);
      for (uint64_t i = 0; i < p.seq_q; ++i) {
        const double lse = forward.lse[qi(b, h, i)];
        if (std::isinf(lse)) continue;  // no visible key: no gradient
        double d_row = 0;  // D_i = sum_d dO[i,d] out[i,d]
        for (uint64_t d = 0; d < Dv; ++d)
          d_row = r(d_row + r(d_out[qi(b, h, i) * Dv + d] * forward.out[qi(b, h, i) * Dv + d]));
        if (!p.sinks.empty())  // the sink column's dS: P_sink * (0 - D_i)
          g.d_sinks[h] = r(g.d_sinks[h] - r(r(std::exp(r(r(p.sinks[h]) - lse))) * d_row));
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          if (!key_visible(p, b, h, i, j)) continue;
          double dot = 0;
          for (uint64_t d = 0; d < D; ++d) dot = r(dot + r(p.q[qi(b, h, i) * D + d] * p.k[ki(b, hk, j) * D + d]));
          const double z = r(scale * dot);
          double s = z, slope_of_cap = 1;
          if (p.softcap > 0) {
            const double t = r(std::tanh(r(z / cap)));
            s = r(cap * t);
            slope_of_cap = r(1 - r(t * t));
          }
          if (p.score_mod) {
            slope_of_cap = r(slope_of_cap * r(score_mod_slope(p, s, b, h, i, j)));
            s = r(p.score_mod(s, b, h, i, j));
          }
          if (!p.alibi_slopes.empty()) {
            const int64_t distance = int64_t(i) + offset - int64_t(j);
            s = r(s - r(slope * r(double(distance < 0 ? -distance : distance))));  // as the forward
          }
          if (!p.additive_mask.empty()) s = r(s + p.additive_mask[mi(b, h, i, j)]);
          const double prob = r(std::exp(r(s - lse)));
          // Dropout: out used prob * w (w = 1/(1-p) or 0), so dV takes that
          // weight and dP is dO.v times w; D_i = dO.out already holds it.
          const double w = p.dropout ? r(dropout_weight(p, b, h, i, j)) : 1;
          const double kept = p.dropout ? r(prob * w) : prob;
          double dp = 0;  // dP[i,j] = sum_d dO[i,d] v[j,d]
          for (uint64_t d = 0; d < Dv; ++d) {
            dp = r(dp + r(d_out[qi(b, h, i) * Dv + d] * p.v[ki(b, hk, j) * Dv + d]));
            g.dv[ki(b, hk, j) * Dv + d] = r(g.dv[ki(b, hk, j) * Dv + d] + r(kept * d_out[qi(b, h, i) * Dv + d]));
          }
          if (p.dropout) dp = r(dp * w);
          const double dz = r(r(prob * r(dp - d_row)) * slope_of_cap);
          for (uint64_t d = 0; d < D; ++d) {
            g.dq[qi(b, h, i) * D + d] = r(g.dq[qi(b, h, i) * D + d] + r(r(scale * dz) * p.k[ki(b, hk, j) * D + d]));
            g.dk[ki(b, hk, j) * D + d] = r(g.dk[ki(b, hk, j) * D + d] + r(r(scale * dz) * p.q[qi(b, h, i) * D + d]));
          }
        }
      }
    }
  return g;
}

}  // namespace

AttentionGradients reference_attention_backward(const AttentionProblem& p, const std::vector<double>& d_out) {
  return backward(p, d_out, reference_attention(p), [](double x) { return x; });
}

AttentionGradients naive_attention_backward_in_dtype(const AttentionProblem& p, const std::vector<double>& d_out,
                                                     ElementType type) {
  return backward(p, d_out, naive_attention_in_dtype(p, type),
                  [type](double x) { return static_cast<double>(round_to(type, x)); });
}

std::vector<double> table_gradient_by_central_differences(const AttentionProblem& p, const std::vector<double>& d_out,
                                                          std::vector<float>& table) {
  auto loss = [&] {
    const AttentionResult r = reference_attention(p);
    double sum = 0;
    for (size_t i = 0; i < r.out.size(); ++i) sum += r.out[i] * d_out[i];
    return sum;
  };
  constexpr float kStep = 1.0f / 1024;
  std::vector<double> gradient(table.size());
  for (size_t e = 0; e < table.size(); ++e) {
    const float saved = table[e];
    table[e] = saved + kStep;
    const double up = loss();
    table[e] = saved - kStep;
    const double down = loss();
    table[e] = saved;
    gradient[e] = (up - down) / (2.0 * double(kStep));
  }
  return gradient;
}

}  // namespace mfagen::reference
