// As an app does it: generated kernels on disk, Library::load, select, plan,
// run on the cpu backend (and the Metal backend where the build has it); out and lse against the float64 reference, and the
// LaunchPlan path bit-identical to the DispatchPlan path, and BSHD tensors
// (strides only, no copies) bit-identical to BHSD.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "attention_reference.h"
#include "generated_manifest.h"
#include "mfagen/cpu_backend.h"
#if MFAGEN_HAVE_METAL_BACKEND
#include "mfagen/metal_backend.h"
#endif
#include "random_inputs.h"
#include "tolerance.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> half_bytes(const std::vector<double>& v) {
  std::vector<std::byte> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t bits = reference::half_bits(float(v[i]));
    std::memcpy(&b[i * 2], &bits, 2);
  }
  return b;
}

TEST(EndToEnd, LoadSelectPlanRunOnTheCpuBackend) {
  const fs::path dir = fs::temp_directory_path() / ("mfagen_runtime_e2e_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path manifest = test::generate_into(
      R"({"kernels": [{"dtype": "float16", "head_dim": 32, "causal": ["none", "bottom_right"]},
                      {"kind": "decode", "dtype": "float16", "head_dim": 32, "causal": "bottom_right"}]})",
      dir);
  const Library library = Library::load(manifest);
  CpuBackend backend;
  for (uint64_t sq : {3u, 40u}) {  // decode, then prefill
    reference::AttentionProblem p;
    p.heads_q = 4;
    p.heads_kv = 2;
    p.seq_q = sq;
    p.seq_k = 50;
    p.head_dim = p.head_dim_v = 32;
    p.causal = reference::CausalMode::bottom_right;
    p.q = reference::random_tensor(4 * sq * 32, 1, reference::ElementType::float16);
    p.k = reference::random_tensor(2 * 50 * 32, 2, reference::ElementType::float16);
    p.v = reference::random_tensor(2 * 50 * 32, 3, reference::ElementType::float16);

    AttentionQuery q;
    q.head_dim = q.head_dim_v = 32;
    q.causal = CausalMode::bottom_right;
    q.need_lse = true;
    q.shape = {1, 4, 2, sq, 50};
    const KernelEntry& kernel = library.select(q);
    EXPECT_EQ(kernel.kind, sq <= 16 ? KernelKind::decode : KernelKind::forward);
    ForwardCall call;
    call.shape = q.shape;
    call.strides = contiguous_bhsd(q.shape, 32, 32);
    const DispatchPlan plan = Library::plan(kernel, call);
    std::vector<std::byte> qb = half_bytes(p.q), kb = half_bytes(p.k), vb = half_bytes(p.v);
    std::vector<std::byte> out(plan.buffer("out")->bytes);
    std::vector<float> lse(4 * sq);
    backend.run(library, kernel, plan,
                {{kForwardQ, qb}, {kForwardK, kb}, {kForwardV, vb}, {kForwardOut, out},
                 {kForwardLse, std::as_writable_bytes(std::span(lse))}});
    std::vector<float> got(out.size() / 2);
    for (size_t i = 0; i < got.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, &out[i * 2], 2);
      got[i] = reference::half_from_bits(bits);
    }
    const auto expected = reference::reference_attention(p);
    const auto verdict = reference::check_output(
        got, expected, reference::naive_attention_in_dtype(p, reference::ElementType::float16),
        reference::ElementType::float16, p);
    EXPECT_TRUE(verdict.ok) << verdict.detail;
    EXPECT_TRUE(reference::check_lse(lse, expected, p).ok);

    // The allocation-free LaunchPlan runs the same launches: bit-identical results.
    const LaunchPlan fast = Library::launch_plan(kernel, call);
    std::vector<std::byte> out2(out.size());
    std::vector<float> lse2(lse.size());
    backend.run(library, kernel, fast,
                {{kForwardQ, qb}, {kForwardK, kb}, {kForwardV, vb}, {kForwardOut, out2},
                 {kForwardLse, std::as_writable_bytes(std::span(lse2))}});
    EXPECT_EQ(out2, out);
    EXPECT_EQ(lse2, lse);

    // BSHD (FlashAttention's layout) is the same kernel with other strides:
    // no copies, bit-identical rows.
    auto to_bshd = [](const std::vector<std::byte>& bhsd, uint64_t heads, uint64_t rows, uint64_t d) {
      std::vector<std::byte> bshd(bhsd.size());
      for (uint64_t h = 0; h < heads; ++h)
        for (uint64_t r = 0; r < rows; ++r)
          std::memcpy(&bshd[(r * heads + h) * d * 2], &bhsd[(h * rows + r) * d * 2], d * 2);
      return bshd;
    };
    ForwardCall bshd = call;
    bshd.strides.q = {sq * 4 * 32, 32, 4 * 32};
    bshd.strides.k = {50 * 2 * 32, 32, 2 * 32};
    bshd.strides.v = bshd.strides.k;
    bshd.strides.out = bshd.strides.q;
    const LaunchPlan bshd_plan = Library::launch_plan(kernel, bshd);
    std::vector<std::byte> qs = to_bshd(qb, 4, sq, 32), ks = to_bshd(kb, 2, 50, 32), vs = to_bshd(vb, 2, 50, 32);
    std::vector<std::byte> out3(out.size());
    std::vector<float> lse3(lse.size());
    backend.run(library, kernel, bshd_plan,
                {{kForwardQ, qs}, {kForwardK, ks}, {kForwardV, vs}, {kForwardOut, out3},
                 {kForwardLse, std::as_writable_bytes(std::span(lse3))}});
    EXPECT_EQ(out3, to_bshd(out, 4, sq, 32)) << "BSHD, seq_q " << sq;
    EXPECT_EQ(lse3, lse);

#if MFAGEN_HAVE_METAL_BACKEND
    // The Metal backend (here on the metal-cpp stand-in, tests/metal) runs
    // the same launches: bit-identical, for both plan types and BSHD.
    MetalBackend metal;
    for (const bool dispatch_plan : {false, true}) {
      std::vector<std::byte> out4(out.size());
      std::vector<float> lse4(lse.size());
      const TensorMap tensors = {{kForwardQ, qb}, {kForwardK, kb}, {kForwardV, vb}, {kForwardOut, out4},
                                 {kForwardLse, std::as_writable_bytes(std::span(lse4))}};
      if (dispatch_plan)
        metal.run(library, kernel, plan, tensors);
      else
        metal.run(library, kernel, fast, tensors);
      EXPECT_EQ(out4, out) << "metal, seq_q " << sq;
      EXPECT_EQ(lse4, lse);
    }
    std::vector<std::byte> out5(out.size());
    std::vector<float> lse5(lse.size());
    metal.run(library, kernel, bshd_plan,
              {{kForwardQ, qs}, {kForwardK, ks}, {kForwardV, vs}, {kForwardOut, out5},
               {kForwardLse, std::as_writable_bytes(std::span(lse5))}});
    EXPECT_EQ(out5, out3) << "metal, BSHD, seq_q " << sq;
#endif
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mfagen
