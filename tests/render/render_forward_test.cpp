// The forward renderer: deterministic, self-contained output that carries
// exactly the code of the features its spec asks for. (Whether the kernels
// compute attention correctly is tests/kernels.)
#include <gtest/gtest.h>

#include "render/render_forward.h"
#include "spec/canonical.h"
#include "spec/spec_parser.h"

namespace mfagen::render {
namespace {

plan::KernelPlan plan_for(const std::string& json) {
  auto specs = spec::parse_spec_text(json, "test.json");
  EXPECT_EQ(specs.size(), 1u);
  return plan::plan_kernel(specs.at(0));
}

TEST(RenderForward, IsDeterministicAndSelfContained) {
  const auto p = plan_for(R"({"dtype": "float16", "head_dim": 128, "causal": "bottom_right"})");
  const std::string a = render_forward(p), b = render_forward(plan_for(R"({"head_dim": 128, "causal": "bottom_right", "dtype": "float16"})"));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.find("{{"), std::string::npos);
  EXPECT_NE(a.find("// attn_fwd_f16_d128_causal_br_gqa: FlashAttention forward"), std::string::npos);
  EXPECT_NE(a.find("do not edit"), std::string::npos);
  EXPECT_NE(a.find("// Hash: " + forward_kernel_hash(p)), std::string::npos);
  EXPECT_NE(a.find("// Spec: " + spec::canonical_json(p.spec)), std::string::npos);
  EXPECT_NE(a.find("kernel void attn_fwd_f16_d128_causal_br_gqa("), std::string::npos);
  // Only <metal_stdlib> is included.
  EXPECT_EQ(a.find("#include"), a.rfind("#include"));
  EXPECT_NE(a.find("#include <metal_stdlib>"), std::string::npos);
  EXPECT_EQ(a.find("\n\n\n"), std::string::npos);
}

TEST(RenderForward, FeaturesThatAreOffLeaveNoCode) {
  const std::string plain = render_forward(plan_for(R"({"dtype": "bfloat16", "head_dim": 64, "gqa": false, "lse": false})"));
  EXPECT_EQ(plain.find("device float* lse"), std::string::npos);
  EXPECT_EQ(plain.find("lse_head"), std::string::npos);
  EXPECT_EQ(plain.find("buffer(4)"), std::string::npos);
  EXPECT_EQ(plain.find("offset"), std::string::npos);
  EXPECT_NE(plain.find("const uint kv_head = head;"), std::string::npos);
  EXPECT_NE(plain.find("typedef bfloat elem_t;"), std::string::npos);

  const std::string causal = render_forward(plan_for(R"({"dtype": "float32", "head_dim": 64, "causal": "top_left"})"));
  EXPECT_NE(causal.find("const int offset = 0;"), std::string::npos);
  EXPECT_NE(causal.find("device float* lse [[buffer(4)]]"), std::string::npos);
  EXPECT_NE(causal.find("head / (params.heads_q / params.heads_kv)"), std::string::npos);
}

TEST(RenderForward, HashFollowsTheSpec) {
  const auto a = plan_for(R"({"dtype": "float16", "head_dim": 64})");
  const auto b = plan_for(R"({"dtype": "float16", "head_dim": 64, "lse": false})");
  EXPECT_NE(forward_kernel_hash(a), forward_kernel_hash(b));
  EXPECT_EQ(forward_kernel_hash(a), forward_kernel_hash(plan_for(R"({"dtype": "float16", "head_dim": 64})")));
}

}  // namespace
}  // namespace mfagen::render
