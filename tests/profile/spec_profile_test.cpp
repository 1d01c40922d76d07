// `mfagen profile` on generated kernels: the device bytes it counts equal the
// traffic figures `mfagen explain` derives from the plan (the FlashAttention
// IO model), for forward, decode and backward kernels; sampled profiles of a
// causal launch extrapolate to within 1% of a full one; the counts give
// every kernel its MMAs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/npy.h"

#include "mfagen/forward_dispatch.h"
#include "plan/dispatch_info.h"
#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"
#include "profile/spec_profile.h"

namespace mfagen::profile {
namespace {

spec::KernelSpec make_spec(spec::Kind kind, spec::Causal causal, uint32_t d) {
  spec::KernelSpec s;
  s.kind = kind;
  s.dtype = spec::DType::float16;
  s.head_dim = s.head_dim_v = d;
  s.causal = causal;
  s.gqa = true;
  s.name = "profiled";
  return s;
}

// Device bytes of every launch, the params buffer aside (it is not tensor traffic).
uint64_t tensor_bytes(const KernelWork& work) {
  uint64_t bytes = 0;
  for (const LaunchWork& l : work.launches)
    for (const LaunchWork::Buffer& b : l.buffers)
      if (b.index != plan::kParamsIndex) bytes += b.bytes_read + b.bytes_written;
  return bytes;
}

// Per launch and buffer, for failure messages.
std::string describe(const KernelWork& work) {
  std::string text;
  for (const LaunchWork& l : work.launches) {
    text += "\n" + l.kernel;
    for (const LaunchWork::Buffer& b : l.buffers)
      text += "\n  buffer " + std::to_string(b.index) + " size " + std::to_string(b.size) + " read " +
              std::to_string(b.bytes_read) + " written " + std::to_string(b.bytes_written);
  }
  return text;
}

double mmas(const KernelWork& work) {
  double n = 0;
  for (const LaunchWork& l : work.launches)
    for (Op op : {Op::mma_f16_f32, Op::mma_f16_f16, Op::mma_bf16_f32, Op::mma_bf16_bf16, Op::mma_f32_f32})
      n += l.op(op);
  return n;
}

TEST(SpecProfile, ForwardDeviceBytesEqualTheIoModel) {
  for (spec::Causal causal : {spec::Causal::none, spec::Causal::bottom_right}) {
    const plan::KernelPlan p = plan::plan_kernel(make_spec(spec::Kind::forward, causal, 64));
    const plan::CostShape shape{1, 2, 1, 96, 80};
    const KernelWork work = profile_plan_call(p, shape, 0);
    const plan::ForwardCost cost = plan::forward_cost(p, shape);
    EXPECT_EQ(tensor_bytes(work), cost.kernel_device_bytes) << spec::to_string(causal);
    EXPECT_DOUBLE_EQ(work.useful_flops, cost.flops);
    EXPECT_GT(mmas(work), 0);
    EXPECT_EQ(work.launches.at(0).threadgroups_run, work.launches.at(0).threadgroups);
  }
}

TEST(SpecProfile, DecodeDeviceBytesEqualTheSplitKModel) {
  const plan::KernelPlan p = plan::plan_kernel(make_spec(spec::Kind::decode, spec::Causal::bottom_right, 64));
  const plan::CostShape shape{1, 4, 1, 1, 1024};
  const KernelWork work = profile_plan_call(p, shape, 0);
  ASSERT_EQ(work.launches.size(), 2u) << "partials, then the combine";
  // As `mfagen explain` counts it: K and V once per split and row block,
  // q and out once, the partial results written and read back.
  ForwardCall call;
  call.shape = {shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q, shape.seq_k};
  call.strides = contiguous_bhsd(call.shape, 64, 64);
  const DispatchPlan d = plan_forward(plan::forward_kernel_info(p), call);
  const uint64_t kv = shape.seq_k * (64 + 64) * 2;
  const uint64_t row_blocks = d.launches[0].threadgroups[1] / shape.heads_kv;
  const uint64_t partials = d.buffer("out_partial")->bytes + d.buffer("lse_partial")->bytes;
  const uint64_t q_out = shape.heads_q * (64 + 64) * 2;
  const uint64_t lse = shape.heads_q * 4;
  uint64_t kv_read = 0, others = 0;
  for (const LaunchWork& l : work.launches)
    for (const LaunchWork::Buffer& b : l.buffers) {
      if (b.index == kForwardK || b.index == kForwardV) kv_read += b.bytes_read;
      // The small buffers (q, the partials' lse) are re-read by several
      // threads, from cache: the model counts them once, as compulsory bytes.
      else if (b.index != kForwardParams) others += std::min(b.size, b.bytes_read) + std::min(b.size, b.bytes_written);
    }
  EXPECT_EQ(kv_read, kv * row_blocks) << describe(work);
  EXPECT_EQ(others, q_out + lse + 2 * partials) << describe(work);
}

// Bytes of q, k, v and out (indices 0..3): the tensor traffic of a call.
uint64_t qkvo_bytes(const KernelWork& work) {
  uint64_t bytes = 0;
  for (const LaunchWork& l : work.launches)
    for (const LaunchWork::Buffer& b : l.buffers)
      if (b.index <= kForwardOut) bytes += b.bytes_read + b.bytes_written;
  return bytes;
}

// The serving layouts (DESIGN.md section 13) profile like their dense twins:
// a paged decode reads exactly the K and V bytes of the dense one (pages add
// only their block table), a varlen forward of equal lengths moves exactly the
// dense forward's q, k, v and out bytes.
TEST(SpecProfile, PagedAndVarlenMoveTheTensorBytesOfTheirDenseTwins) {
  spec::KernelSpec decode = make_spec(spec::Kind::decode, spec::Causal::bottom_right, 64);
  spec::KernelSpec paged = decode;
  paged.kv_cache = spec::KvCache::paged;
  const plan::CostShape decode_shape{2, 8, 2, 1, 1000};
  const KernelWork dense_work = profile_plan_call(plan::plan_kernel(decode), decode_shape, 0);
  const KernelWork paged_work = profile_plan_call(plan::plan_kernel(paged), decode_shape, 0);
  EXPECT_EQ(qkvo_bytes(paged_work), qkvo_bytes(dense_work)) << describe(paged_work) << describe(dense_work);
  EXPECT_GT(tensor_bytes(paged_work), tensor_bytes(dense_work));  // the block table and cache lengths

  spec::KernelSpec forward = make_spec(spec::Kind::forward, spec::Causal::bottom_right, 64);
  spec::KernelSpec varlen = forward;
  varlen.layout = spec::Layout::varlen;
  const plan::CostShape forward_shape{3, 2, 1, 70, 90};
  const KernelWork dense_forward = profile_plan_call(plan::plan_kernel(forward), forward_shape, 0);
  const KernelWork varlen_forward = profile_plan_call(plan::plan_kernel(varlen), forward_shape, 0);
  EXPECT_EQ(qkvo_bytes(varlen_forward), qkvo_bytes(dense_forward)) << describe(varlen_forward);
  EXPECT_DOUBLE_EQ(varlen_forward.useful_flops, dense_forward.useful_flops);
}

// K and V bytes as read by quantized decodes (DESIGN.md section 13): the
// stored rows, q8_0 34 and q4_0 18 bytes per 32 values, fp8 one per value,
// plus each block's 2-byte scale read once per 16 values (once more per
// block than stored); against float16's 2 bytes per value.
uint64_t kv_bytes_read(const KernelWork& work) {
  uint64_t bytes = 0;
  for (const LaunchWork& l : work.launches)
    for (const LaunchWork::Buffer& b : l.buffers)
      if (b.index == kForwardK || b.index == kForwardV) bytes += b.bytes_read;
  return bytes;
}

TEST(SpecProfile, QuantizedCachesReadTheirStoredBytes) {
  const plan::CostShape shape{1, 8, 2, 1, 1000};
  const spec::KernelSpec f16 = make_spec(spec::Kind::decode, spec::Causal::bottom_right, 64);
  const uint64_t values = 2 * 1000 * 64 * 2;  // kv heads x keys x D x (k and v)
  EXPECT_EQ(kv_bytes_read(profile_plan_call(plan::plan_kernel(f16), shape, 0)), values * 2);
  const struct {
    spec::KvDType format;
    uint64_t bytes;
  } formats[] = {{spec::KvDType::q8_0, values / 32 * (34 + 2)},
                 {spec::KvDType::q4_0, values / 32 * (18 + 2)},
                 {spec::KvDType::fp8_e4m3, values}};
  for (const auto& f : formats) {
    spec::KernelSpec quantized = f16;
    quantized.kv_dtype = f.format;
    const KernelWork work = profile_plan_call(plan::plan_kernel(quantized), shape, 0);
    EXPECT_EQ(kv_bytes_read(work), f.bytes) << spec::to_string(f.format) << "\n" << describe(work);
  }
}

TEST(SpecProfile, BackwardDeviceBytesEqualTheKernelModel) {
  const plan::KernelPlan p = plan::plan_kernel(make_spec(spec::Kind::backward, spec::Causal::none, 64));
  const plan::CostShape shape{1, 1, 1, 64, 64};
  const KernelWork work = profile_plan_call(p, shape, 0);
  EXPECT_EQ(work.launches.size(), 3u) << "preprocess, dK/dV, dQ";
  const plan::BackwardCost cost = plan::backward_cost(p, shape);
  // Every tensor moves exactly as the model says. The row statistics (lse
  // and D, float32) the model reads once per query and block; the kernels
  // read them once per lane that needs them (up to 4 lanes share a row of a
  // fragment, one transaction on a GPU), so they are compared as a range.
  uint64_t row_stats_read = 0;
  for (const LaunchWork& l : work.launches)
    for (const LaunchWork::Buffer& b : l.buffers)
      if (b.index == plan::kLseIndex || b.index == plan::kDRowsIndex) row_stats_read += b.bytes_read;
  const uint64_t key_blocks = (shape.seq_k + p.block_k - 1) / p.block_k;
  const uint64_t model_row_stats = key_blocks * shape.seq_q * 2 * 4 + shape.seq_q * 2 * 4;  // dK/dV, then dQ
  EXPECT_EQ(tensor_bytes(work) - row_stats_read, cost.kernel_device_bytes - model_row_stats) << describe(work);
  EXPECT_GE(row_stats_read, model_row_stats) << describe(work);
  EXPECT_LE(row_stats_read, 4 * model_row_stats) << describe(work);
  EXPECT_DOUBLE_EQ(work.useful_flops, cost.flops);
}

TEST(SpecProfile, SampledCausalForwardIsWithinOnePercentOfAFullRun) {
  const plan::KernelPlan p = plan::plan_kernel(make_spec(spec::Kind::forward, spec::Causal::bottom_right, 64));
  const plan::CostShape shape{1, 3, 1, 512, 512};
  const KernelWork full = profile_plan_call(p, shape, 0);
  const KernelWork sampled = profile_plan_call(p, shape, 12);
  const LaunchWork& f = full.launches.at(0);
  const LaunchWork& s = sampled.launches.at(0);
  ASSERT_EQ(s.threadgroups_run, 12u);
  ASSERT_GT(f.threadgroups_run, 12u);
  // Each op within 1%, or within 0.1% of all counted ops for the few that
  // happen at the edges of a threadgroup's key range rather than in
  // proportion to it: a key group whose keys all lie past the causal end
  // neither rescales nor merges anything, and the sample may not hold the
  // threadgroups where that happens.
  double all_ops = 0;
  for (uint32_t op = 0; op < cpu::profile::kOpCount; ++op) all_ops += f.ops[op];
  for (uint32_t op = 0; op < cpu::profile::kOpCount; ++op)
    EXPECT_NEAR(s.ops[op], f.ops[op], std::max(0.01 * f.ops[op], 0.001 * all_ops)) << cpu::profile::kOpNames[op];
  EXPECT_NEAR(double(s.device_bytes_read), double(f.device_bytes_read), 0.01 * double(f.device_bytes_read));
  EXPECT_NEAR(double(s.threadgroup_bytes_read), double(f.threadgroup_bytes_read),
              0.01 * double(f.threadgroup_bytes_read));
}

// mask_mod's block sparsity, counted: document masking with 8 equal
// documents in 512 tokens (causal inside each) skips every key block outside
// a document, in the forward and in both backward kernels, so the MMAs of the
// attention kernels fall to 1/8 of plain causal attention's plus the
// partially masked diagonal blocks; the block classes are computed whole
// even when the profile samples (they decide what later launches skip).
TEST(SpecProfile, MaskModSkipsTheBlocksItHides) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mfagen_mask_mod_profile";
  std::filesystem::create_directories(dir);
  const uint64_t tokens = 512;
  std::vector<int32_t> doc(tokens);
  for (uint64_t t = 0; t < tokens; ++t) doc[t] = int32_t(t * 8 / tokens);
  io::write_npy_atomic(dir / "doc.npy", io::NpyArray::from<int32_t>(doc, {1, tokens}));
  for (const char* kind : {"forward", "backward"}) {
    std::ofstream(dir / "doc.json") << R"({"kind": ")" << kind << R"(", "dtype": "float16", "head_dim": 64,
        "causal": "bottom_right", "mask_mod": "q_doc[b, q_idx] == kv_doc[b, kv_idx]",
        "captures": {"q_doc": {"dtype": "int32", "shape": ["B", "Sq"]},
                     "kv_doc": {"dtype": "int32", "shape": ["B", "Sk"]}}})";
    std::ofstream(dir / "plain.json") << R"({"kind": ")" << kind
                                      << R"(", "dtype": "float16", "head_dim": 64, "causal": "bottom_right"})";
    SpecCall call;
    call.shape = {1, 2, 2, tokens, tokens};
    call.spec_file = (dir / "plain.json").string();
    const KernelWork plain = profile_spec_call(call);
    call.spec_file = (dir / "doc.json").string();
    call.captures = {"q_doc=" + (dir / "doc.npy").string(), "kv_doc=" + (dir / "doc.npy").string()};
    call.sample_threadgroups = 7;
    const KernelWork masked = profile_spec_call(call);
    ASSERT_EQ(masked.launches.size(), plain.launches.size() + 1) << kind;  // the _blocks launch first
    EXPECT_EQ(masked.launches.front().threadgroups_run, (tokens / 64) * (tokens / 64)) << kind;  // whole, one table
    // Each 64-token document is one 64x64 key block: only the diagonal blocks remain,
    // 8 of the 36 blocks causal attention visits.
    EXPECT_NEAR(mmas(masked), mmas(plain) * 8.0 / 36.0, 0.02 * mmas(plain)) << kind << describe(masked);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mfagen::profile
