// An app's view of mfagen: it vendored the kernels and manifest.json that
// `mfagen generate` wrote, links mfagen_runtime, and per call lets the
// library pick the kernel for the shape, plans the dispatch and runs it on a
// backend (cpu here; Metal on Apple platforms when built with metal-cpp).
//
// Usage: mfagen-app MANIFEST.json
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "mfagen/cpu_backend.h"
#include "mfagen/library.h"
#ifdef MFAGEN_HAVE_METAL
#include "mfagen/metal_backend.h"
#endif

namespace {

using namespace mfagen;

// float -> IEEE half bits (round to nearest even), for filling half tensors.
uint16_t to_half(float x) {
  _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

float from_half(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

std::vector<std::byte> random_half_tensor(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<std::byte> bytes(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t b = to_half(normal(rng));
    std::memcpy(&bytes[i * 2], &b, 2);
  }
  return bytes;
}

// One attention call: Llama-3-8B-like heads, a prompt chunk or one decoded token.
int attention_call(const Library& library, Backend& backend, uint64_t seq_q, uint64_t seq_k) {
  AttentionQuery q;
  q.dtype = ElementType::float16;
  q.head_dim = q.head_dim_v = 128;
  q.causal = CausalMode::bottom_right;
  q.need_lse = false;
  q.shape = {1, 8, 2, seq_q, seq_k};
  ForwardCall call;
  call.shape = q.shape;
  call.strides = contiguous_bhsd(q.shape, 128, 128);
  // The per-call hot path: select + launch_plan, no allocation, no lock.
  // Timed over many calls, as an app making one call per layer and token would.
  // Selection takes what the device offers (TensorOps kernels only where it
  // supports them; their simdgroup_matrix twins elsewhere).
  const DeviceCapabilities device = backend.capabilities();
  constexpr int kTimedCalls = 100000;
  LaunchPlan plan;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kTimedCalls; ++i) Library::launch_plan(library.select(q, device), call, plan);
  const double select_plan_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kTimedCalls;
  const KernelEntry& kernel = library.select(q, device);

  std::mt19937 rng(seq_q * 1000 + seq_k);
  std::vector<std::byte> qb = random_half_tensor(8 * seq_q * 128, rng), kb = random_half_tensor(2 * seq_k * 128, rng),
                         vb = random_half_tensor(2 * seq_k * 128, rng), out(plan.buffer(kForwardOut)->bytes);
  std::vector<float> lse(8 * seq_q);
  TensorMap tensors = {{kForwardQ, qb}, {kForwardK, kb}, {kForwardV, vb}, {kForwardOut, out}};
  if (kernel.info.lse) tensors[kForwardLse] = std::as_writable_bytes(std::span(lse));
  const RunStats stats = backend.run(library, kernel, plan, tensors);

  double checksum = 0;
  bool finite = true;
  for (size_t i = 0; i < out.size() / 2; ++i) {
    uint16_t bits;
    std::memcpy(&bits, &out[i * 2], 2);
    const float x = from_half(bits);
    finite = finite && std::isfinite(x);
    checksum += x;
  }
  std::printf("seq_q %5llu seq_k %5llu -> %-40s %u launch(es), select+plan %.0f ns, %s run %.3f s, checksum %.4f%s\n",
              (unsigned long long)seq_q, (unsigned long long)seq_k, kernel.name.c_str(), plan.launch_count,
              select_plan_ns, std::string(backend.name()).c_str(), stats.seconds, checksum,
              backend.measures_gpu_time() ? "" : " (time: emulation on the CPU)");
  if (!finite) std::printf("  output NOT FINITE\n");
  return finite ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MANIFEST.json\n", argv[0]);
    return 1;
  }
  try {
    const Library library = Library::load(argv[1]);
    std::printf("%zu kernels in %s\n", library.kernels().size(), argv[1]);
    CpuBackend cpu;
    int failures = attention_call(library, cpu, 64, 96) + attention_call(library, cpu, 1, 300);
#ifdef MFAGEN_HAVE_METAL
    MetalBackend metal;  // the GPU on Apple platforms, the metal-cpp stand-in elsewhere
    metal.prepare(library);  // every pipeline built up front
    failures += attention_call(library, metal, 64, 96) + attention_call(library, metal, 1, 300);
#endif
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mfagen-app: %s\n", e.what());
    return 2;
  }
}
