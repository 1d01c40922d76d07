// The session's attention call over host tensors (session/attention_call.h):
// tensors in the kernel's dtype are read in place with their strides and
// give exactly what contiguous copies give; gradients come back with the
// strides of their inputs; a backward given out and lse (as autograd calls
// it) equals the backward that runs the forward first; mistakes are
// CallErrors naming the argument before any kernel runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "mfagen/cpu_backend.h"
#include "plan/kernel_plan.h"
#include "session/attention_call.h"
#include "session/call_error.h"
#include "spec/spec_parser.h"

namespace mfagen::session {
namespace {

using ::testing::HasSubstr;

SpecLibrary one_kernel(const std::string& json) {
  return SpecLibrary(std::vector<plan::KernelPlan>{plan::plan_kernel(spec::parse_spec_text(json, "test").front())});
}

struct Fixture {
  SpecLibrary forward = one_kernel(R"({"dtype": "float32", "head_dim": 8, "causal": "top_left"})");
  SpecLibrary backward = one_kernel(R"({"kind": "backward", "dtype": "float32", "head_dim": 8, "causal": "top_left"})");
  std::unique_ptr<CpuBackend> backend;
  Fixture() {
    backend = std::make_unique<CpuBackend>(true, [this](const Library&, const KernelEntry& k) {
      return forward.sources.count(k.file) ? forward.sources.at(k.file) : backward.sources.at(k.file);
    });
  }
  KernelSet set(const SpecLibrary& s) {
    return {s, "test", [this](const plan::KernelPlan&) -> const SpecLibrary& { return forward; }};
  }
};

// B=2, S=5, H=2, D=8 values stored (B, S, H, D): seen as (B, H, S, D) through strides.
constexpr uint64_t B = 2, S = 5, H = 2, D = 8;

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

HostTensor bshd_view(const std::string& name, const std::vector<float>& storage) {
  return {name, HostDType::float32, {B, H, S, D}, {int64_t(S * H * D), int64_t(D), int64_t(H * D), 1},
          reinterpret_cast<const std::byte*>(storage.data())};
}

// The same values copied into (B, H, S, D) order.
std::vector<float> bhsd_copy(const std::vector<float>& storage) {
  std::vector<float> out(storage.size());
  for (uint64_t b = 0; b < B; ++b)
    for (uint64_t h = 0; h < H; ++h)
      for (uint64_t s = 0; s < S; ++s)
        for (uint64_t d = 0; d < D; ++d) out[((b * H + h) * S + s) * D + d] = storage[((b * S + s) * H + h) * D + d];
  return out;
}

HostTensor contiguous(const std::string& name, const std::vector<float>& values, HostDType dtype = HostDType::float32) {
  return {name, dtype, {B, H, S, D}, {}, reinterpret_cast<const std::byte*>(values.data())};
}

std::vector<float> floats(const OutputTensor& t) {
  std::vector<float> v(t.bytes.size() / 4);
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

TEST(AttentionCall, StridedInputsAreReadInPlaceAndGradientsKeepTheirStrides) {
  Fixture f;
  const std::vector<float> q = random_values(B * S * H * D, 1), k = random_values(B * S * H * D, 2),
                           v = random_values(B * S * H * D, 3), d_out = random_values(B * H * S * D, 4);
  const std::vector<float> qc = bhsd_copy(q), kc = bhsd_copy(k), vc = bhsd_copy(v);

  AttentionInputs strided;
  strided.q = bshd_view("q", q);
  strided.k = bshd_view("k", k);
  strided.v = bshd_view("v", v);
  strided.d_out = contiguous("dO", d_out);
  AttentionInputs packed_copy = strided;
  packed_copy.q = contiguous("q", qc);
  packed_copy.k = contiguous("k", kc);
  packed_copy.v = contiguous("v", vc);

  const AttentionResult a = run_attention(f.set(f.backward), strided, {}, *f.backend);
  const AttentionResult b = run_attention(f.set(f.backward), packed_copy, {}, *f.backend);
  EXPECT_EQ(a.out.bytes, b.out.bytes);
  EXPECT_EQ(a.lse.bytes, b.lse.bytes);
  ASSERT_TRUE(a.dq && b.dq);
  EXPECT_EQ(a.dq->strides, strided.q.strides);  // written where q's elements are
  EXPECT_TRUE(b.dq->strides.empty());
  const std::vector<float> dq_strided = floats(*a.dq), dq = floats(*b.dq);
  EXPECT_EQ(bhsd_copy(dq_strided), dq);
}

TEST(AttentionCall, BackwardGivenOutAndLseEqualsBackwardAfterItsForward) {
  Fixture f;
  const std::vector<float> q = random_values(B * H * S * D, 5), k = random_values(B * H * S * D, 6),
                           v = random_values(B * H * S * D, 7), d_out = random_values(B * H * S * D, 8);
  AttentionInputs in;
  in.q = contiguous("q", q);
  in.k = contiguous("k", k);
  in.v = contiguous("v", v);
  const AttentionResult forward = run_attention(f.set(f.forward), in, {}, *f.backend);
  ASSERT_TRUE(forward.ran_forward && forward.has_lse);
  in.d_out = contiguous("dO", d_out);
  const AttentionResult both = run_attention(f.set(f.backward), in, {}, *f.backend);
  const std::vector<float> out = floats(forward.out), lse = floats(forward.lse);
  in.out = HostTensor{"out", HostDType::float32, forward.out.shape, {}, reinterpret_cast<const std::byte*>(out.data())};
  in.lse = HostTensor{"lse", HostDType::float32, forward.lse.shape, {}, reinterpret_cast<const std::byte*>(lse.data())};
  const AttentionResult given = run_attention(f.set(f.backward), in, {}, *f.backend);
  EXPECT_FALSE(given.ran_forward);
  EXPECT_EQ(given.dq->bytes, both.dq->bytes);
  EXPECT_EQ(given.dk->bytes, both.dk->bytes);
  EXPECT_EQ(given.dv->bytes, both.dv->bytes);
}

TEST(AttentionCall, OtherFloatDtypesAreRoundedToTheKernels) {
  Fixture f;
  const std::vector<float> q = random_values(B * H * S * D, 9);
  std::vector<double> q64(q.begin(), q.end());
  AttentionInputs a;
  a.q = contiguous("q", q);
  a.k = a.q;
  a.v = a.q;
  AttentionInputs b = a;
  b.q = {"q", HostDType::float64, {B, H, S, D}, {}, reinterpret_cast<const std::byte*>(q64.data())};
  EXPECT_EQ(run_attention(f.set(f.forward), a, {}, *f.backend).out.bytes,
            run_attention(f.set(f.forward), b, {}, *f.backend).out.bytes);
}

TEST(AttentionCall, MistakesNameTheArgument) {
  Fixture f;
  const std::vector<float> q = random_values(2 * B * H * S * D, 10);
  AttentionInputs in;
  in.q = contiguous("q", q);
  in.k = contiguous("k", q);
  in.v = contiguous("v", q);
  auto message = [&](AttentionInputs call, AttentionOptions options = {}) {
    try {
      run_attention(f.set(f.forward), call, options, *f.backend);
    } catch (const CallError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  AttentionInputs strided_rows = in;
  strided_rows.q.strides = {int64_t(2 * H * S * D), int64_t(2 * S * D), int64_t(2 * D), 2};
  EXPECT_THAT(message(strided_rows), HasSubstr("q: the last dimension has stride 2"));
  AttentionInputs wrong_dtype = in;
  wrong_dtype.k.dtype = HostDType::int32;
  EXPECT_THAT(message(wrong_dtype), HasSubstr("k: dtype int32; expected float16, bfloat16, float32 or float64"));
  AttentionInputs wrong_heads = in;
  wrong_heads.v.shape = {B, 3, S, D};
  EXPECT_THAT(message(wrong_heads), HasSubstr("the kv head counts must match"));
  AttentionOptions negative;
  negative.scale = -1;
  EXPECT_THAT(message(in, negative), HasSubstr("scale -1: expected a finite number > 0"));
  AttentionInputs masked = in;  // the set has no mask kernel: selection names what was asked
  const std::vector<uint8_t> mask(S * S, 1);
  masked.mask = HostTensor{"mask", HostDType::boolean, {S, S}, {}, reinterpret_cast<const std::byte*>(mask.data())};
  EXPECT_THAT(message(masked), HasSubstr("has no kernel for this call"));
}

}  // namespace
}  // namespace mfagen::session
