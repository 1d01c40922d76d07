#include "attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace mfagen::reference {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Flat indices into the contiguous BHSD tensors.
uint64_t q_index(const AttentionProblem& p, uint64_t b, uint64_t h, uint64_t i, uint64_t d) {
  return ((b * p.heads_q + h) * p.seq_q + i) * p.head_dim + d;
}
uint64_t k_index(const AttentionProblem& p, uint64_t b, uint64_t hk, uint64_t j, uint64_t d) {
  return ((b * p.heads_kv + hk) * p.seq_k + j) * p.head_dim + d;
}
uint64_t v_index(const AttentionProblem& p, uint64_t b, uint64_t hk, uint64_t j, uint64_t d) {
  return ((b * p.heads_kv + hk) * p.seq_k + j) * p.head_dim_v + d;
}
uint64_t out_index(const AttentionProblem& p, uint64_t b, uint64_t h, uint64_t i, uint64_t d) {
  return ((b * p.heads_q + h) * p.seq_q + i) * p.head_dim_v + d;
}
uint64_t row_index(const AttentionProblem& p, uint64_t b, uint64_t h, uint64_t i) {
  return (b * p.heads_q + h) * p.seq_q + i;
}

// GQA: query head h reads kv head h / (Hq / Hkv).
uint64_t kv_head(const AttentionProblem& p, uint64_t h) { return h / (p.heads_q / p.heads_kv); }

bool has_mask(const AttentionProblem& p) { return !p.bool_mask.empty() || !p.additive_mask.empty(); }

// Broadcast: a mask dim of size 1 is read at index 0 whatever the position.
uint64_t mask_index(const AttentionProblem& p, uint64_t b, uint64_t h, uint64_t i, uint64_t j) {
  const auto& s = p.mask_shape;
  uint64_t mb = s[0] == 1 ? 0 : b, mh = s[1] == 1 ? 0 : h, mi = s[2] == 1 ? 0 : i, mj = s[3] == 1 ? 0 : j;
  return ((mb * s[1] + mh) * s[2] + mi) * s[3] + mj;
}

// Slopes are given per query head, or per (batch, query head).
double alibi_slope(const AttentionProblem& p, uint64_t b, uint64_t h) {
  return p.alibi_slopes.size() == p.heads_q ? p.alibi_slopes[h] : p.alibi_slopes[b * p.heads_q + h];
}

// |i + off - j| as a double (the ALiBi distance).
double alibi_distance(const AttentionProblem& p, uint64_t i, uint64_t j) {
  int64_t distance = static_cast<int64_t>(i) + query_offset(p) - static_cast<int64_t>(j);
  return static_cast<double>(distance < 0 ? -distance : distance);
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("attention problem: " + message);
}

void require_size(const char* what, uint64_t actual, uint64_t expected) {
  require(actual == expected,
          std::string(what) + " has " + std::to_string(actual) + " values, the shape needs " + std::to_string(expected));
}

void require_finite(const char* what, const std::vector<double>& values) {
  for (double x : values) require(std::isfinite(x), std::string(what) + " holds a non-finite value");
}

}  // namespace

void validate(const AttentionProblem& p) {
  require(p.heads_q >= 1 && p.heads_kv >= 1, "heads_q and heads_kv must be at least 1");
  require(p.heads_q % p.heads_kv == 0, "heads_q (" + std::to_string(p.heads_q) + ") is not a multiple of heads_kv (" +
                                           std::to_string(p.heads_kv) + ")");
  require(p.head_dim >= 1 && p.head_dim_v >= 1, "head_dim and head_dim_v must be at least 1");
  require_size("q", p.q.size(), p.batch * p.heads_q * p.seq_q * p.head_dim);
  require_size("k", p.k.size(), p.batch * p.heads_kv * p.seq_k * p.head_dim);
  require_size("v", p.v.size(), p.batch * p.heads_kv * p.seq_k * p.head_dim_v);
  require_finite("q", p.q);
  require_finite("k", p.k);
  require_finite("v", p.v);
  require(std::isfinite(p.scale), "scale must be finite");
  require(std::isfinite(p.softcap) && p.softcap >= 0, "softcap must be finite and >= 0 (0 = off)");
  if (p.window) {
    require(p.window->first >= -1 && p.window->second >= -1, "window sides must be >= 0, or -1 for unbounded");
  }
  require(p.alibi_slopes.empty() || p.alibi_slopes.size() == p.heads_q || p.alibi_slopes.size() == p.batch * p.heads_q,
          "alibi_slopes needs heads_q or batch*heads_q values, has " + std::to_string(p.alibi_slopes.size()));
  require_finite("alibi_slopes", p.alibi_slopes);
  require(p.sinks.empty() || p.sinks.size() == p.heads_q,
          "sinks needs heads_q values, has " + std::to_string(p.sinks.size()));
  for (double x : p.sinks) require(std::isfinite(x) || x == -kInfinity, "sinks holds NaN or +inf");
  require(!p.dropout || (p.dropout->p >= 0 && p.dropout->p < 1), "dropout p must be in [0, 1)");
  if (has_mask(p)) {
    const std::array<uint64_t, 4> full = {p.batch, p.heads_q, p.seq_q, p.seq_k};
    for (int dim = 0; dim < 4; ++dim) {
      require(p.mask_shape[dim] == 1 || p.mask_shape[dim] == full[dim],
              "mask_shape[" + std::to_string(dim) + "] = " + std::to_string(p.mask_shape[dim]) + ", must be 1 or " +
                  std::to_string(full[dim]));
    }
    uint64_t mask_size = p.mask_shape[0] * p.mask_shape[1] * p.mask_shape[2] * p.mask_shape[3];
    if (!p.bool_mask.empty()) require_size("bool_mask", p.bool_mask.size(), mask_size);
    if (!p.additive_mask.empty()) require_size("additive_mask", p.additive_mask.size(), mask_size);
    for (double x : p.additive_mask) {
      // -inf hides a key; NaN or +inf would make the softmax meaningless.
      require(std::isfinite(x) || x == -kInfinity, "additive_mask holds NaN or +inf");
    }
  }
}

double effective_scale(const AttentionProblem& p) {
  return p.scale != 0 ? p.scale : 1.0 / std::sqrt(static_cast<double>(p.head_dim));
}

int64_t query_offset(const AttentionProblem& p) {
  if (p.causal == CausalMode::top_left) return 0;
  return static_cast<int64_t>(p.seq_k) - static_cast<int64_t>(p.seq_q);
}

double dropout_weight(const AttentionProblem& p, uint64_t b, uint64_t h, uint64_t i, uint64_t j) {
  if (!p.dropout) return 1;
  return dropout_keeps(*p.dropout, p.heads_q, b, h, i, j) ? 1 / (1 - p.dropout->p) : 0;
}

bool key_visible(const AttentionProblem& p, uint64_t b, uint64_t h, uint64_t i, uint64_t j) {
  // Signed: i + off is negative for early queries when Sq > Sk.
  const int64_t diagonal = static_cast<int64_t>(i) + query_offset(p);
  const int64_t key = static_cast<int64_t>(j);
  if (p.causal != CausalMode::none && key > diagonal) return false;
  if (p.window) {
    auto [left, right] = *p.window;
    if (left != -1 && key < diagonal - left) return false;
    if (right != -1 && key > diagonal + right) return false;
  }
  if (!p.bool_mask.empty() && p.bool_mask[mask_index(p, b, h, i, j)] == 0) return false;
  if (!p.additive_mask.empty() && p.additive_mask[mask_index(p, b, h, i, j)] == -kInfinity) return false;
  if (p.mask_mod && !p.mask_mod(b, h, i, j)) return false;
  return true;
}

double score_mod_slope(const AttentionProblem& p, double z, uint64_t b, uint64_t h, uint64_t i, uint64_t j) {
  if (!p.score_mod) return 1;
  const double step = 1e-5 * std::max(1.0, std::fabs(z));
  return (p.score_mod(z + step, b, h, i, j) - p.score_mod(z - step, b, h, i, j)) / (2 * step);
}

AttentionResult reference_attention(const AttentionProblem& p) {
  validate(p);
  const double scale = effective_scale(p);
  AttentionResult result;
  result.out.assign(p.batch * p.heads_q * p.seq_q * p.head_dim_v, 0.0);
  result.lse.assign(p.batch * p.heads_q * p.seq_q, -kInfinity);

  std::vector<double> s(p.seq_k);
  std::vector<bool> visible(p.seq_k);
  for (uint64_t b = 0; b < p.batch; ++b) {
    for (uint64_t h = 0; h < p.heads_q; ++h) {
      const uint64_t hk = kv_head(p, h);
      for (uint64_t i = 0; i < p.seq_q; ++i) {
        // Logits of the visible keys.
        bool any_visible = false;
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          visible[j] = key_visible(p, b, h, i, j);
          if (!visible[j]) continue;
          any_visible = true;
          double dot = 0;
          for (uint64_t d = 0; d < p.head_dim; ++d) dot += p.q[q_index(p, b, h, i, d)] * p.k[k_index(p, b, hk, j, d)];
          double z = scale * dot;
          double logit = p.softcap > 0 ? p.softcap * std::tanh(z / p.softcap) : z;
          if (p.score_mod) logit = p.score_mod(logit, b, h, i, j);
          if (!p.alibi_slopes.empty()) logit += -alibi_slope(p, b, h) * alibi_distance(p, i, j);
          if (!p.additive_mask.empty()) logit += p.additive_mask[mask_index(p, b, h, i, j)];
          s[j] = logit;
        }
        // The sink is one more softmax column, with no value: it only adds to the sum.
        const double sink = p.sinks.empty() ? -kInfinity : p.sinks[h];
        if (!any_visible) {  // out row stays exactly 0, lse stays -inf (or is the sink)
          result.lse[row_index(p, b, h, i)] = sink;
          continue;
        }

        // Softmax over the visible keys, with the max subtracted so exp cannot overflow.
        double max = sink;
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          if (visible[j]) max = std::max(max, s[j]);
        }
        double sum = std::exp(sink - max);
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          if (visible[j]) sum += std::exp(s[j] - max);
        }
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          if (!visible[j]) continue;
          double probability = std::exp(s[j] - max) / sum * dropout_weight(p, b, h, i, j);
          for (uint64_t d = 0; d < p.head_dim_v; ++d) {
            result.out[out_index(p, b, h, i, d)] += probability * p.v[v_index(p, b, hk, j, d)];
          }
        }
        result.lse[row_index(p, b, h, i)] = max + std::log(sum);
      }
    }
  }
  return result;
}

AttentionResult naive_attention_in_dtype(const AttentionProblem& p, ElementType type) {
  validate(p);
  // r(x): the result of one operation, stored in the element type. Each
  // operation is computed in double and rounded once; for +, -, *, / that is
  // exactly the element type's own correctly rounded operation (double has
  // more than 2p+2 bits for p = 11, 8 and 24, so the double rounding is
  // innocuous), hence float32 here equals plain float arithmetic.
  auto r = [type](double x) { return static_cast<double>(round_to(type, x)); };
  auto require_representable = [&](const char* what, const std::vector<double>& values) {
    for (double x : values) {
      require(!std::isfinite(x) || r(x) == x,
              std::string(what) + " holds a value not representable in " + std::string(to_string(type)) +
                  " (round the inputs first)");
    }
  };
  require_representable("q", p.q);
  require_representable("k", p.k);
  require_representable("v", p.v);
  require_representable("additive_mask", p.additive_mask);

  const double scale = r(effective_scale(p));
  const double softcap = r(p.softcap);
  AttentionResult result;
  result.out.assign(p.batch * p.heads_q * p.seq_q * p.head_dim_v, 0.0);
  result.lse.assign(p.batch * p.heads_q * p.seq_q, -kInfinity);

  std::vector<double> s(p.seq_k), e(p.seq_k);
  std::vector<bool> visible(p.seq_k);
  for (uint64_t b = 0; b < p.batch; ++b) {
    for (uint64_t h = 0; h < p.heads_q; ++h) {
      const uint64_t hk = kv_head(p, h);
      const double slope = p.alibi_slopes.empty() ? 0.0 : r(alibi_slope(p, b, h));
      for (uint64_t i = 0; i < p.seq_q; ++i) {
        bool any_visible = false;
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          visible[j] = key_visible(p, b, h, i, j);
          if (!visible[j]) continue;
          any_visible = true;
          double dot = 0;
          for (uint64_t d = 0; d < p.head_dim; ++d) {
            dot = r(dot + r(p.q[q_index(p, b, h, i, d)] * p.k[k_index(p, b, hk, j, d)]));
          }
          double logit = r(scale * dot);
          if (p.softcap > 0) logit = r(softcap * r(std::tanh(r(logit / softcap))));
          if (p.score_mod) logit = r(p.score_mod(logit, b, h, i, j));
          if (!p.alibi_slopes.empty()) logit = r(logit - r(slope * r(alibi_distance(p, i, j))));
          if (!p.additive_mask.empty()) logit = r(logit + p.additive_mask[mask_index(p, b, h, i, j)]);
          s[j] = logit;
        }
        const double sink = p.sinks.empty() ? -kInfinity : r(p.sinks[h]);
        if (!any_visible) {
          result.lse[row_index(p, b, h, i)] = sink;
          continue;
        }

        double max = sink;
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          if (visible[j]) max = std::max(max, s[j]);
        }
        double sum = r(std::exp(r(sink - max)));
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          if (!visible[j]) continue;
          e[j] = r(std::exp(r(s[j] - max)));
          sum = r(sum + e[j]);
        }
        for (uint64_t j = 0; j < p.seq_k; ++j) {
          if (!visible[j]) continue;
          double probability = r(e[j] / sum);
          if (p.dropout) probability = r(probability * r(dropout_weight(p, b, h, i, j)));
          for (uint64_t d = 0; d < p.head_dim_v; ++d) {
            double& o = result.out[out_index(p, b, h, i, d)];
            o = r(o + r(probability * p.v[v_index(p, b, hk, j, d)]));
          }
        }
        result.lse[row_index(p, b, h, i)] = r(max + r(std::log(sum)));
      }
    }
  }
  return result;
}

}  // namespace mfagen::reference
