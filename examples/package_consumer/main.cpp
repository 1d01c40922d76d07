// A consumer of the installed package: loads the manifest mfagen_add_kernels()
// generated at build time, runs one attention call on the cpu backend and
// checks it against a plain float64 computation.
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

#include "mfagen/cpu_backend.h"
#include "mfagen/library.h"

int main() {
  using namespace mfagen;
  const Library library = Library::load(MFAGEN_KERNELS_DIR "/attention/manifest.json");
  const uint64_t hq = 4, hkv = 2, sq = 20, sk = 33, d = 64;
  AttentionQuery query;
  query.dtype = ElementType::float32;
  query.head_dim = query.head_dim_v = d;
  query.causal = CausalMode::bottom_right;
  query.shape = {1, hq, hkv, sq, sk};
  CpuBackend backend;
  const KernelEntry& kernel = library.select(query, backend.capabilities());
  ForwardCall call;
  call.shape = query.shape;
  call.strides = contiguous_bhsd(call.shape, d, d);
  const DispatchPlan plan = Library::plan(kernel, call);

  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> q(hq * sq * d), k(hkv * sk * d), v(hkv * sk * d), out(hq * sq * d), lse(hq * sq);
  for (std::vector<float>* t : {&q, &k, &v})
    for (float& x : *t) x = normal(rng);
  backend.run(library, kernel, plan,
              {{kForwardQ, std::as_writable_bytes(std::span(q))}, {kForwardK, std::as_writable_bytes(std::span(k))},
               {kForwardV, std::as_writable_bytes(std::span(v))}, {kForwardOut, std::as_writable_bytes(std::span(out))},
               {kForwardLse, std::as_writable_bytes(std::span(lse))}});

  // float64: causal bottom_right, key j visible to query i iff j <= i + sk - sq.
  double worst = 0;
  for (uint64_t h = 0; h < hq; ++h)
    for (uint64_t i = 0; i < sq; ++i) {
      const uint64_t hk = h / (hq / hkv), visible = i + (sk - sq) + 1;
      std::vector<double> p(visible);
      double top = -INFINITY, total = 0;
      for (uint64_t j = 0; j < visible; ++j) {
        double dot = 0;
        for (uint64_t c = 0; c < d; ++c) dot += double(q[(h * sq + i) * d + c]) * k[(hk * sk + j) * d + c];
        top = std::max(top, p[j] = dot / std::sqrt(double(d)));
      }
      for (double& x : p) total += (x = std::exp(x - top));
      for (uint64_t c = 0; c < d; ++c) {
        double o = 0;
        for (uint64_t j = 0; j < visible; ++j) o += p[j] / total * v[(hk * sk + j) * d + c];
        worst = std::max(worst, std::abs(o - out[(h * sq + i) * d + c]));
      }
    }
  const bool pass = worst < 5e-5;
  std::printf("%s: max |out - float64| = %.3g: %s\n", kernel.name.c_str(), worst, pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
