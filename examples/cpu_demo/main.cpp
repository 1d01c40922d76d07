// The built-in example: runs the bundled attention kernel on the cpu backend
// (the generated-MSL ground truth of DESIGN.md section 7) and checks it
// against a plain float64 reference.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mfagen/cpu/backend.h"

namespace {

struct AttentionParams {
  uint32_t seq_q, seq_k, heads;
  float scale_log2;
};

constexpr uint32_t kHeadDim = 64;

std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              uint32_t heads, uint32_t sq, uint32_t sk) {
  const double scale = 1.0 / std::sqrt(double(kHeadDim));
  std::vector<double> out(size_t(heads) * sq * kHeadDim, 0.0);
  for (uint32_t h = 0; h < heads; ++h)
    for (uint32_t i = 0; i < sq; ++i) {
      std::vector<double> s(sk);
      double m = -INFINITY;
      for (uint32_t j = 0; j < sk; ++j) {
        double dot = 0;
        for (uint32_t d = 0; d < kHeadDim; ++d)
          dot += double(q[(size_t(h) * sq + i) * kHeadDim + d]) * k[(size_t(h) * sk + j) * kHeadDim + d];
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - m));
      for (uint32_t j = 0; j < sk; ++j)
        for (uint32_t d = 0; d < kHeadDim; ++d)
          out[(size_t(h) * sq + i) * kHeadDim + d] += s[j] / sum * v[(size_t(h) * sk + j) * kHeadDim + d];
    }
  return out;
}

template <typename T>
std::span<std::byte> bytes(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}

}  // namespace

int main() {
  const uint32_t heads = 2, sq = 100, sk = 77, rows_per_group = 32;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](size_t n) {
    std::vector<float> x(n);
    for (float& e : x) e = normal(rng);
    return x;
  };
  std::vector<float> q = random(size_t(heads) * sq * kHeadDim), k = random(size_t(heads) * sk * kHeadDim),
                     v = random(size_t(heads) * sk * kHeadDim), out(size_t(heads) * sq * kHeadDim, 0.0f);
  AttentionParams params{sq, sk, heads, float(1.0 / std::sqrt(double(kHeadDim)) * M_LOG2E)};
  std::vector<AttentionParams> param_buffer{params};

  try {
    mfagen::cpu::CompileStats stats;
    auto module = mfagen::cpu::compile_file(MFAGEN_DEMO_KERNEL, {}, &stats);
    fmt::print("compiled {} ({}, {:.2f} s)\n", MFAGEN_DEMO_KERNEL, stats.cache_hit ? "cached" : "cold", stats.seconds);
    mfagen::cpu::LaunchOptions launch;
    launch.threadgroups = {(sq + rows_per_group - 1) / rows_per_group, heads, 1};
    launch.threads_per_threadgroup = {rows_per_group, 1, 1};
    launch.buffers = {{0, bytes(q)}, {1, bytes(k)}, {2, bytes(v)}, {3, bytes(out)}, {4, bytes(param_buffer)}};
    auto result = mfagen::cpu::launch(*module, "attention_rows", launch);
    for (const auto& f : result.findings) fmt::print(stderr, "{}\n", f.to_string());

    std::vector<double> expected = reference(q, k, v, heads, sq, sk);
    double max_error = 0;
    for (size_t i = 0; i < out.size(); ++i) max_error = std::max(max_error, std::abs(out[i] - expected[i]));
    const double tolerance = 5e-6 + 5e-5;  // DESIGN.md section 3, float32
    fmt::print("attention_rows: heads={} seq_q={} seq_k={} head_dim={} on the cpu backend in {:.3f} s\n", heads, sq,
               sk, kHeadDim, result.seconds);
    fmt::print("device traffic: {} bytes read, {} bytes written; detector findings: {}\n", result.device_bytes_read,
               result.device_bytes_written, result.findings_total);
    fmt::print("max |out - float64 reference| = {:.3g} (tolerance {:.3g}): {}\n", max_error, tolerance,
               max_error <= tolerance && result.clean() ? "PASS" : "FAIL");
    return max_error <= tolerance && result.clean() ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 2;
  }
}
