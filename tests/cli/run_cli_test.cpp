// `mfagen run` end to end: .npy tensors in, the generated kernel selected
// from a spec set and run on the cpu backend, out.npy and lse.npy checked
// against the float64 reference (reference/); the Metal backend where the
// build has it gives the same bytes; and its error cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attention_backward_reference.h"
#include "attention_reference.h"
#include "packed_batch.h"
#include "paged_cache.h"
#include "quantized_kv.h"
#include "gradient_tolerance.h"
#include "io/npy.h"
#include "random_inputs.h"
#include "mfagen_cli_test.h"
#include "tolerance.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using io::NpyArray;
using reference::ElementType;
using ::testing::HasSubstr;

constexpr const char* kSpecSet = R"({"kernels": [
  {"dtype": "float16", "head_dim": 64, "causal": ["none", "bottom_right"]},
  {"dtype": "float16", "head_dim": 16, "mask": "additive", "softcap": true, "alibi": true, "window": true},
  {"dtype": "float32", "head_dim": 16, "mask": "bool", "causal": "top_left"},
  {"kind": "decode", "dtype": "float16", "head_dim": 8},
  {"kind": "backward", "dtype": "float32", "head_dim": 16, "head_dim_v": 8, "causal": "bottom_right"},
  {"dtype": "float16", "head_dim": 8},
  {"dtype": "bfloat16", "head_dim": 32, "head_dim_v": 16, "gqa": false},
  {"dtype": "float32", "head_dim": 24, "lse": false}
]})";

class RunCli : public test::MfagenCliTest {
 protected:
  void SetUp() override {
    MfagenCliTest::SetUp();
    std::ofstream(dir_ / "set.json") << kSpecSet;
  }

  std::string spec() const { return (dir_ / "set.json").string(); }
  std::string out_dir() const { return (dir_ / "out").string(); }

  // out.npy in `dir` against the float64 reference of `p` (inputs exact in `type`).
  void expect_out_matches(const reference::AttentionProblem& p, const fs::path& dir, ElementType type) {
    const auto verdict = reference::check_output(io::read_npy(dir / "out.npy").values<float>(),
                                                 reference::reference_attention(p),
                                                 reference::naive_attention_in_dtype(p, type), type, p);
    EXPECT_TRUE(verdict.ok) << verdict.detail;
  }

  // dq.npy, dk.npy and dv.npy in `dir`: the shapes of q, k and v, and the
  // float64 reference's gradients for dO = `d_out` (float32 inputs).
  void expect_gradients_match(const reference::AttentionProblem& p, const std::vector<double>& d_out,
                              const fs::path& dir) {
    const auto want = reference::reference_attention_backward(p, d_out);
    const auto naive = reference::naive_attention_backward_in_dtype(p, d_out, ElementType::float32);
    const struct {
      const char* file;
      const std::vector<double>* reference;
      const std::vector<double>* naive;
      std::array<uint64_t, 4> shape;
    } grads[] = {{"dq.npy", &want.dq, &naive.dq, {p.batch, p.heads_q, p.seq_q, p.head_dim}},
                 {"dk.npy", &want.dk, &naive.dk, {p.batch, p.heads_kv, p.seq_k, p.head_dim}},
                 {"dv.npy", &want.dv, &naive.dv, {p.batch, p.heads_kv, p.seq_k, p.head_dim_v}}};
    for (const auto& g : grads) {
      const NpyArray a = io::read_npy(dir / g.file);
      EXPECT_EQ(a.shape, std::vector<uint64_t>(g.shape.begin(), g.shape.end())) << g.file;
      const auto verdict = reference::check_gradient(a.values<float>(), *g.reference, *g.naive, ElementType::float32,
                                                     g.file, g.shape);
      EXPECT_TRUE(verdict.ok) << verdict.detail;
    }
  }

  // `args` with --out-dir DIR/bad appended exits 1 with `message` on stderr
  // (each test checks afterwards that nothing was written there).
  void expect_refused(std::vector<std::string> args, const std::string& message) {
    args.insert(args.end(), {"--out-dir", (dir_ / "bad").string()});
    const auto bad = mfagen(args);
    EXPECT_EQ(bad.exit_code, 1) << message;
    EXPECT_THAT(bad.err, HasSubstr(message));
  }

  // A (b, h, s, d) tensor of values exact in `type`, written as `npy_dtype`.
  std::string tensor(const std::string& name, std::vector<uint64_t> shape, uint64_t seed, ElementType type,
                     std::vector<double>* values, const std::string& npy_dtype = "<f4") {
    uint64_t n = 1;
    for (uint64_t e : shape) n *= e;
    *values = reference::random_tensor(n, seed, type);
    NpyArray array;
    if (npy_dtype == "<f8") {
      array = NpyArray::from<double>(*values, shape);
    } else {
      std::vector<float> f(values->begin(), values->end());
      array = NpyArray::from<float>(f, shape);
    }
    const fs::path path = dir_ / name;
    io::write_npy_atomic(path, array);
    return path.string();
  }
};

reference::AttentionProblem problem_of(uint64_t b, uint64_t hq, uint64_t hkv, uint64_t sq, uint64_t sk, uint64_t d,
                                       uint64_t dv, reference::CausalMode causal) {
  reference::AttentionProblem p;
  p.batch = b;
  p.heads_q = hq;
  p.heads_kv = hkv;
  p.seq_q = sq;
  p.seq_k = sk;
  p.head_dim = d;
  p.head_dim_v = dv;
  p.causal = causal;
  return p;
}

TEST_F(RunCli, SelectsByShapeAndMatchesTheReference) {
  auto p = problem_of(2, 4, 2, 19, 33, 64, 64, reference::CausalMode::bottom_right);
  const std::string q = tensor("q.npy", {2, 4, 19, 64}, 1, ElementType::float16, &p.q);
  const std::string k = tensor("k.npy", {2, 2, 33, 64}, 2, ElementType::float16, &p.k);
  const std::string v = tensor("v.npy", {2, 2, 33, 64}, 3, ElementType::float16, &p.v);
  auto r = mfagen({"run", spec(), "--q", q, "--k", k, "--v", v, "--causal", "bottom_right", "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_f16_d64_causal_br_gqa"));

  const NpyArray out = io::read_npy(fs::path(out_dir()) / "out.npy");
  const NpyArray lse = io::read_npy(fs::path(out_dir()) / "lse.npy");
  EXPECT_EQ(out.dtype, "<f4");
  EXPECT_EQ(out.shape, (std::vector<uint64_t>{2, 4, 19, 64}));
  EXPECT_EQ(lse.shape, (std::vector<uint64_t>{2, 4, 19}));
  const auto expected = reference::reference_attention(p);
  const auto naive = reference::naive_attention_in_dtype(p, ElementType::float16);
  const auto verdict = reference::check_output(out.values<float>(), expected, naive, ElementType::float16, p);
  EXPECT_TRUE(verdict.ok) << verdict.detail;
  const auto lse_verdict = reference::check_lse(lse.values<float>(), expected, p);
  EXPECT_TRUE(lse_verdict.ok) << lse_verdict.detail;
}

TEST_F(RunCli, FirstMatchingKernelWithoutFilters) {
  auto p = problem_of(1, 2, 2, 9, 9, 64, 64, reference::CausalMode::none);
  const std::string q = tensor("q.npy", {1, 2, 9, 64}, 4, ElementType::float16, &p.q);
  const std::string k = tensor("k.npy", {1, 2, 9, 64}, 5, ElementType::float16, &p.k);
  const std::string v = tensor("v.npy", {1, 2, 9, 64}, 6, ElementType::float16, &p.v);
  auto r = mfagen({"run", spec(), "--q=" + q, "--k=" + k, "--v=" + v, "--out-dir=" + out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_f16_d64_gqa:"));
  const auto expected = reference::reference_attention(p);
  const auto verdict = reference::check_output(io::read_npy(fs::path(out_dir()) / "out.npy").values<float>(), expected,
                                               reference::naive_attention_in_dtype(p, ElementType::float16),
                                               ElementType::float16, p);
  EXPECT_TRUE(verdict.ok) << verdict.detail;
}

TEST_F(RunCli, RoundsFloat64InputsToTheKernelDtypeAndHandlesDvAndNoLse) {
  // bfloat16 kernel, float64 inputs that are not bfloat16 values: the kernel
  // must see them rounded to nearest even, as the reference does.
  auto p = problem_of(1, 3, 3, 7, 12, 32, 16, reference::CausalMode::none);
  std::vector<double> raw_q, raw_k, raw_v;
  const std::string q = tensor("q.npy", {1, 3, 7, 32}, 7, ElementType::float32, &raw_q, "<f8");
  const std::string k = tensor("k.npy", {1, 3, 12, 32}, 8, ElementType::float32, &raw_k, "<f8");
  const std::string v = tensor("v.npy", {1, 3, 12, 16}, 9, ElementType::float32, &raw_v, "<f8");
  for (auto [from, to] : {std::pair{&raw_q, &p.q}, {&raw_k, &p.k}, {&raw_v, &p.v}})
    for (double x : *from) to->push_back(reference::round_to(ElementType::bfloat16, x));
  auto r = mfagen({"run", spec(), "--q", q, "--k", k, "--v", v, "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_bf16_d32_dv16"));
  const auto expected = reference::reference_attention(p);
  const auto verdict = reference::check_output(io::read_npy(fs::path(out_dir()) / "out.npy").values<float>(), expected,
                                               reference::naive_attention_in_dtype(p, ElementType::bfloat16),
                                               ElementType::bfloat16, p);
  EXPECT_TRUE(verdict.ok) << verdict.detail;

  // The float32 kernel has lse: false: out.npy only.
  auto p32 = problem_of(1, 1, 1, 5, 6, 24, 24, reference::CausalMode::none);
  const std::string q32 = tensor("q32.npy", {1, 1, 5, 24}, 10, ElementType::float32, &p32.q);
  const std::string k32 = tensor("k32.npy", {1, 1, 6, 24}, 11, ElementType::float32, &p32.k);
  const std::string v32 = tensor("v32.npy", {1, 1, 6, 24}, 12, ElementType::float32, &p32.v);
  const std::string dir32 = (dir_ / "out32").string();
  r = mfagen({"run", spec(), "--q", q32, "--k", k32, "--v", v32, "--scale", "0.5", "--out-dir", dir32});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(fs::path(dir32) / "lse.npy"));
  p32.scale = 0.5;
  const auto e32 = reference::reference_attention(p32);
  const auto v32_verdict = reference::check_output(io::read_npy(fs::path(dir32) / "out.npy").values<float>(), e32,
                                                   reference::naive_attention_in_dtype(p32, ElementType::float32),
                                                   ElementType::float32, p32);
  EXPECT_TRUE(v32_verdict.ok) << v32_verdict.detail;
}

TEST_F(RunCli, FeaturesMaskSoftcapAlibiWindow) {
  // Additive mask (1, 1, Sq, Sk) with -inf, per-head slopes, softcap and a window.
  auto p = problem_of(2, 2, 1, 6, 11, 16, 16, reference::CausalMode::none);
  const std::string q = tensor("q.npy", {2, 2, 6, 16}, 21, ElementType::float16, &p.q);
  const std::string k = tensor("k.npy", {2, 1, 11, 16}, 22, ElementType::float16, &p.k);
  const std::string v = tensor("v.npy", {2, 1, 11, 16}, 23, ElementType::float16, &p.v);
  std::vector<double> mask_values;
  tensor("m_raw.npy", {1, 1, 6, 11}, 24, ElementType::float16, &mask_values);
  for (size_t i = 0; i < mask_values.size(); i += 4) mask_values[i] = -INFINITY;
  for (size_t j = 0; j < 11; ++j) mask_values[2 * 11 + j] = -INFINITY;  // row 2 sees nothing
  const std::vector<float> mask_f(mask_values.begin(), mask_values.end());
  io::write_npy_atomic(dir_ / "mask.npy", NpyArray::from<float>(mask_f, {1, 1, 6, 11}));
  const std::vector<float> slopes = {0.5f, 0.25f};
  io::write_npy_atomic(dir_ / "slopes.npy", NpyArray::from<float>(slopes, {2}));
  auto r = mfagen({"run", spec(), "--q", q, "--k", k, "--v", v, "--mask", (dir_ / "mask.npy").string(),
                   "--alibi-slopes", (dir_ / "slopes.npy").string(), "--softcap", "4", "--window-left=3",
                   "--window-right=-1", "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_f16_d16_gqa_mask_add_window_softcap_alibi"));
  p.additive_mask = mask_values;
  p.mask_shape = {1, 1, 6, 11};
  p.alibi_slopes = {0.5, 0.25};
  p.softcap = 4;
  p.window = {{3, -1}};
  const auto expected = reference::reference_attention(p);
  const auto verdict = reference::check_output(io::read_npy(fs::path(out_dir()) / "out.npy").values<float>(), expected,
                                               reference::naive_attention_in_dtype(p, ElementType::float16),
                                               ElementType::float16, p);
  EXPECT_TRUE(verdict.ok) << verdict.detail;
  const auto lse = reference::check_lse(io::read_npy(fs::path(out_dir()) / "lse.npy").values<float>(), expected, p);
  EXPECT_TRUE(lse.ok) << lse.detail;

  // A bool mask (B, 1, Sq, Sk) on the causal float32 kernel.
  auto pb = problem_of(2, 3, 3, 5, 7, 16, 16, reference::CausalMode::top_left);
  const std::string qb = tensor("qb.npy", {2, 3, 5, 16}, 25, ElementType::float32, &pb.q);
  const std::string kb = tensor("kb.npy", {2, 3, 7, 16}, 26, ElementType::float32, &pb.k);
  const std::string vb = tensor("vb.npy", {2, 3, 7, 16}, 27, ElementType::float32, &pb.v);
  NpyArray bool_mask;
  bool_mask.dtype = "|b1";
  bool_mask.shape = {2, 1, 5, 7};
  for (uint64_t i = 0; i < 70; ++i) {
    const bool visible = (i * 7 + 3) % 5 != 0;
    bool_mask.data.push_back(std::byte{visible});
    pb.bool_mask.push_back(visible);
  }
  pb.mask_shape = {2, 1, 5, 7};
  io::write_npy_atomic(dir_ / "bmask.npy", bool_mask);
  const std::string dirb = (dir_ / "outb").string();
  r = mfagen({"run", spec(), "--q", qb, "--k", kb, "--v", vb, "--mask", (dir_ / "bmask.npy").string(), "--out-dir", dirb});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto eb = reference::reference_attention(pb);
  const auto vb_verdict = reference::check_output(io::read_npy(fs::path(dirb) / "out.npy").values<float>(), eb,
                                                  reference::naive_attention_in_dtype(pb, ElementType::float32),
                                                  ElementType::float32, pb);
  EXPECT_TRUE(vb_verdict.ok) << vb_verdict.detail;

  // Feature inputs that do not fit.
  const std::vector<float> wrong_slopes = {1, 2, 3};
  io::write_npy_atomic(dir_ / "slopes3.npy", NpyArray::from<float>(wrong_slopes, {3}));
  const auto bad = mfagen({"run", spec(), "--q", q, "--k", k, "--v", v, "--mask", (dir_ / "mask.npy").string(),
                           "--alibi-slopes", (dir_ / "slopes3.npy").string(), "--softcap", "4", "--window-left=3", "--out-dir",
                           (dir_ / "bad").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("expected shape (2,) or (2, 2), found (3,)"));
  const auto bad_mask = mfagen({"run", spec(), "--q", qb, "--k", kb, "--v", vb, "--mask", (dir_ / "mask.npy").string(),
                                "--out-dir", (dir_ / "bad").string()});
  EXPECT_EQ(bad_mask.exit_code, 1);
  EXPECT_THAT(bad_mask.err, HasSubstr("does not broadcast to (B, Hq, Sq, Sk) = (2, 3, 5, 7)"));
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

TEST_F(RunCli, DecodeKernelForFewQueriesForwardForMany) {
  for (uint64_t sq : {3u, 17u}) {
    auto p = problem_of(1, 4, 2, sq, 300, 8, 8, reference::CausalMode::none);
    const std::string q = tensor("q.npy", {1, 4, sq, 8}, 31, ElementType::float16, &p.q);
    const std::string k = tensor("k.npy", {1, 2, 300, 8}, 32, ElementType::float16, &p.k);
    const std::string v = tensor("v.npy", {1, 2, 300, 8}, 33, ElementType::float16, &p.v);
    const std::string dir = (dir_ / ("out" + std::to_string(sq))).string();
    auto r = mfagen({"run", spec(), "--q", q, "--k", k, "--v", v, "--out-dir", dir});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(sq <= 16 ? "attn_decode_f16_d8_gqa:" : "attn_fwd_f16_d8_gqa:"));
    const auto expected = reference::reference_attention(p);
    const auto verdict = reference::check_output(io::read_npy(fs::path(dir) / "out.npy").values<float>(), expected,
                                                 reference::naive_attention_in_dtype(p, ElementType::float16),
                                                 ElementType::float16, p);
    EXPECT_TRUE(verdict.ok) << verdict.detail;
  }
}

TEST_F(RunCli, BackwardWritesGradients) {
  auto p = problem_of(1, 4, 2, 9, 14, 16, 8, reference::CausalMode::bottom_right);
  const std::string q = tensor("q.npy", {1, 4, 9, 16}, 41, ElementType::float32, &p.q);
  const std::string k = tensor("k.npy", {1, 2, 14, 16}, 42, ElementType::float32, &p.k);
  const std::string v = tensor("v.npy", {1, 2, 14, 8}, 43, ElementType::float32, &p.v);
  std::vector<double> d_out;
  const std::string d = tensor("do.npy", {1, 4, 9, 8}, 44, ElementType::float32, &d_out);
  auto r = mfagen({"run", spec(), "--q", q, "--k", k, "--v", v, "--do", d, "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_bwd_f32_d16_dv8_causal_br_gqa:"));
  const fs::path dir(out_dir());
  expect_gradients_match(p, d_out, dir);
  EXPECT_TRUE(fs::exists(dir / "out.npy"));
  EXPECT_TRUE(fs::exists(dir / "lse.npy"));
  // dO of the wrong shape.
  auto bad = mfagen({"run", spec(), "--q", q, "--k", k, "--v", v, "--do", q, "--out-dir", (dir_ / "bad").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("dO must have the shape of out, (1, 4, 9, 8)"));
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// Attention sinks (DESIGN.md section 13): --sinks gives one logit per q head;
// the forward's out and lse and the backward's gradients, d_sinks included,
// match the float64 reference; sink inputs that do not fit are clear errors.
// Dropout (spec dropout): --dropout, --seed and --offset give the mask the
// float64 reference draws with the same Philox counter; the backward
// regenerates it; bad probabilities and a seed without --dropout are errors.
TEST_F(RunCli, DropoutForwardAndBackward) {
  std::ofstream(dir_ / "dropout.json") << R"({"kind": ["forward", "backward"], "dtype": "float32", "head_dim": 16,
                                             "dropout": true})";
  const std::string dropout_spec = (dir_ / "dropout.json").string();
  auto p = problem_of(1, 4, 2, 9, 14, 16, 16, reference::CausalMode::none);
  const std::string q = tensor("q.npy", {1, 4, 9, 16}, 61, ElementType::float32, &p.q);
  const std::string k = tensor("k.npy", {1, 2, 14, 16}, 62, ElementType::float32, &p.k);
  const std::string v = tensor("v.npy", {1, 2, 14, 16}, 63, ElementType::float32, &p.v);
  std::vector<double> d_out;
  const std::string d = tensor("do.npy", {1, 4, 9, 16}, 64, ElementType::float32, &d_out);
  p.dropout = reference::DropoutOptions{0.25, 1234567890123ull, 5};
  const std::vector<std::string> options = {"--dropout", "0.25", "--seed", "1234567890123", "--offset", "5"};
  std::vector<std::string> args = {"run", dropout_spec, "--q", q, "--k", k, "--v", v, "--do", d, "--out-dir", out_dir()};
  args.insert(args.end(), options.begin(), options.end());
  const auto r = mfagen(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_out_matches(p, out_dir(), ElementType::float32);
  expect_gradients_match(p, d_out, out_dir());

  const struct {
    std::vector<std::string> extra;
    const char* message;
  } bad_calls[] = {
      {{"--dropout", "1"}, "--dropout 1: expected a probability in [0, 1)"},
      {{"--seed", "3"}, "--seed and --offset key the dropout mask: they need --dropout"},
      {{}, "has no kernel for this call"},
  };
  for (const auto& bad_call : bad_calls) {
    std::vector<std::string> args = {"run", dropout_spec, "--q", q, "--k", k, "--v", v};
    args.insert(args.end(), bad_call.extra.begin(), bad_call.extra.end());
    expect_refused(args, bad_call.message);
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// score_mod / mask_mod: captured tensors as --capture NAME=FILE.npy, scalars
// as --scalar NAME=VALUE, checked against the kernel; forward and backward
// against the float64 reference applying the same functions.
TEST_F(RunCli, ScoreFunctionsForwardAndBackward) {
  std::ofstream(dir_ / "mods.json") << R"({"kind": ["forward", "backward"], "dtype": "float32", "head_dim": 16,
      "score_mod": "score * s + rel[q_idx - kv_idx + Sk - 1]", "mask_mod": "doc[b, kv_idx] == 0 || q_idx >= kv_idx",
      "captures": {"rel": {"dtype": "float32", "shape": ["Sq + Sk - 1"]}, "doc": {"dtype": "int32", "shape": ["B", "Sk"]}},
      "scalars": ["s"]})";
  const std::string mods_spec = (dir_ / "mods.json").string();
  auto p = problem_of(1, 4, 2, 9, 14, 16, 16, reference::CausalMode::none);
  const std::string q = tensor("q.npy", {1, 4, 9, 16}, 71, ElementType::float32, &p.q);
  const std::string k = tensor("k.npy", {1, 2, 14, 16}, 72, ElementType::float32, &p.k);
  const std::string v = tensor("v.npy", {1, 2, 14, 16}, 73, ElementType::float32, &p.v);
  std::vector<double> d_out;
  const std::string d = tensor("do.npy", {1, 4, 9, 16}, 74, ElementType::float32, &d_out);
  std::vector<float> rel(22);
  for (size_t i = 0; i < rel.size(); ++i) rel[i] = 0.1f * float(i % 7) - 0.3f;
  std::vector<int32_t> doc(14);
  for (size_t j = 0; j < doc.size(); ++j) doc[j] = int32_t(j % 3 == 1);
  io::write_npy_atomic(dir_ / "rel.npy", NpyArray::from<float>(rel, {22}));
  io::write_npy_atomic(dir_ / "doc.npy", NpyArray::from<int32_t>(doc, {1, 14}));
  auto table = std::make_shared<std::vector<float>>(rel);  // shared: perturbed below for d_rel
  p.score_mod = [table](double z, uint64_t, uint64_t, uint64_t i, uint64_t j) {
    return z * 1.5 + double((*table)[i - j + 13]);
  };
  p.mask_mod = [doc](uint64_t, uint64_t, uint64_t i, uint64_t j) { return doc[j] == 0 || i >= j; };
  const std::vector<std::string> inputs = {"--capture", "rel=" + (dir_ / "rel.npy").string(), "--capture",
                                           "doc=" + (dir_ / "doc.npy").string(), "--scalar", "s=1.5"};
  std::vector<std::string> args = {"run", mods_spec, "--q", q, "--k", k, "--v", v, "--do", d, "--out-dir", out_dir()};
  args.insert(args.end(), inputs.begin(), inputs.end());
  const auto r = mfagen(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_out_matches(p, out_dir(), ElementType::float32);
  expect_gradients_match(p, d_out, out_dir());
  // d_rel.npy: the gradient of the captured table, against central differences of the float64 loss sum(dO . out).
  const io::NpyArray d_rel = io::read_npy(fs::path(out_dir()) / "d_rel.npy");
  ASSERT_EQ(d_rel.shape, std::vector<uint64_t>{22});
  const std::vector<float> got = d_rel.values<float>();
  const std::vector<double> want_rel = reference::table_gradient_by_central_differences(p, d_out, *table);
  for (size_t e = 0; e < got.size(); ++e) EXPECT_NEAR(got[e], want_rel[e], 1e-3) << "d_rel[" << e << "]";

  io::write_npy_atomic(dir_ / "short.npy", NpyArray::from<float>(rel, {11, 2}));
  io::write_npy_atomic(dir_ / "docf.npy", NpyArray::from<float>(rel, {1, 22}));
  const std::string rel_arg = "rel=" + (dir_ / "rel.npy").string(), doc_arg = "doc=" + (dir_ / "doc.npy").string();
  const struct {
    std::vector<std::string> extra;
    const char* message;
  } bad_calls[] = {
      {{"--capture", rel_arg, "--scalar", "s=1"}, "reads capture doc: give --capture doc=FILE.npy"},
      {{"--capture", rel_arg, "--capture", doc_arg}, "reads scalar s: give --scalar s=VALUE"},
      {{"--capture", rel_arg, "--capture", doc_arg, "--scalar", "s=inf"}, "--scalar s=inf: expected a finite float32"},
      {{"--capture", rel_arg, "--capture", doc_arg, "--scalar", "t=1"}, "has no scalar named t (it has: s)"},
      {{"--capture", rel_arg, "--capture", rel_arg, "--scalar", "s=1"}, "rel is given twice"},
      {{"--capture", "rel=" + (dir_ / "short.npy").string(), "--capture", doc_arg, "--scalar", "s=1"},
       "expected shape (22,) (the extents Sq + Sk - 1 at this call's shape), found (11, 2)"},
      {{"--capture", rel_arg, "--capture", "doc=" + (dir_ / "docf.npy").string(), "--scalar", "s=1"},
       "expected dtype <i4 (doc is int32), found <f4"},
      {{"--capture", "rel", "--scalar", "s=1"}, "--capture rel: expected NAME=FILE.npy"},
  };
  for (const auto& bad_call : bad_calls) {
    std::vector<std::string> args = {"run", mods_spec, "--q", q, "--k", k, "--v", v};
    args.insert(args.end(), bad_call.extra.begin(), bad_call.extra.end());
    expect_refused(args, bad_call.message);
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

TEST_F(RunCli, SinksForwardAndBackward) {
  std::ofstream(dir_ / "sinks.json") << R"({"kind": ["forward", "backward"], "dtype": "float32", "head_dim": 16,
                                           "causal": "bottom_right", "sinks": true})";
  const std::string sinks_spec = (dir_ / "sinks.json").string();
  auto p = problem_of(1, 4, 2, 9, 14, 16, 16, reference::CausalMode::bottom_right);
  const std::string q = tensor("q.npy", {1, 4, 9, 16}, 51, ElementType::float32, &p.q);
  const std::string k = tensor("k.npy", {1, 2, 14, 16}, 52, ElementType::float32, &p.k);
  const std::string v = tensor("v.npy", {1, 2, 14, 16}, 53, ElementType::float32, &p.v);
  std::vector<double> d_out;
  const std::string d = tensor("do.npy", {1, 4, 9, 16}, 54, ElementType::float32, &d_out);
  const std::vector<float> sinks = {1.5f, -0.5f, -INFINITY, 2.75f};
  io::write_npy_atomic(dir_ / "sinks.npy", NpyArray::from<float>(sinks, {4}));
  p.sinks.assign(sinks.begin(), sinks.end());

  auto r = mfagen({"run", sinks_spec, "--q", q, "--k", k, "--v", v, "--sinks", (dir_ / "sinks.npy").string(),
                   "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_f32_d16_causal_br_gqa_sinks:"));
  const auto expected = reference::reference_attention(p);
  const auto verdict = reference::check_output(io::read_npy(fs::path(out_dir()) / "out.npy").values<float>(), expected,
                                               reference::naive_attention_in_dtype(p, ElementType::float32),
                                               ElementType::float32, p);
  EXPECT_TRUE(verdict.ok) << verdict.detail;
  const auto lse = reference::check_lse(io::read_npy(fs::path(out_dir()) / "lse.npy").values<float>(), expected, p);
  EXPECT_TRUE(lse.ok) << lse.detail;

  const std::string grads = (dir_ / "grads").string();
  r = mfagen({"run", sinks_spec, "--q", q, "--k", k, "--v", v, "--sinks", (dir_ / "sinks.npy").string(), "--do", d,
              "--out-dir", grads});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("d_sinks.npy"));
  const auto want = reference::reference_attention_backward(p, d_out);
  const auto naive = reference::naive_attention_backward_in_dtype(p, d_out, ElementType::float32);
  const NpyArray d_sinks = io::read_npy(fs::path(grads) / "d_sinks.npy");
  EXPECT_EQ(d_sinks.shape, std::vector<uint64_t>{4});
  const auto d_sinks_verdict = reference::check_gradient(d_sinks.values<float>(), want.d_sinks, naive.d_sinks,
                                                         ElementType::float32, "d_sinks", {1, 1, 1, 4});
  EXPECT_TRUE(d_sinks_verdict.ok) << d_sinks_verdict.detail;
  const auto dq = reference::check_gradient(io::read_npy(fs::path(grads) / "dq.npy").values<float>(), want.dq, naive.dq,
                                            ElementType::float32, "dq", {1, 4, 9, 16});
  EXPECT_TRUE(dq.ok) << dq.detail;

  // Sink logits that do not fit, and a set with only sink kernels called without them.
  io::write_npy_atomic(dir_ / "sinks3.npy", NpyArray::from<float>(std::vector<float>{1, 2, 3}, {3}));
  io::write_npy_atomic(dir_ / "sinks_nan.npy", NpyArray::from<float>(std::vector<float>{1, NAN, 0, 0}, {4}));
  const struct {
    std::vector<std::string> extra;
    const char* message;
  } bad_calls[] = {
      {{"--sinks", (dir_ / "sinks3.npy").string()}, "expected shape (4,), one logit per q head, found (3,)"},
      {{"--sinks", (dir_ / "sinks_nan.npy").string()}, "holds NaN or +inf"},
      {{}, "has no kernel for this call"},
  };
  for (const auto& bad_call : bad_calls) {
    std::vector<std::string> args = {"run", sinks_spec, "--q", q, "--k", k, "--v", v};
    args.insert(args.end(), bad_call.extra.begin(), bad_call.extra.end());
    expect_refused(args, bad_call.message);
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// Packed sequences (spec layout varlen): q (Tq, Hq, D), k and v (Tk, Hkv, D)
// with --cu-seqlens-q/k; out (Tq, Hq, Dv) and lse (Hq, Tq), and the backward's
// packed gradients, each sequence against the float64 reference of that
// sequence alone; cu_seqlens that do not fit the tensors are clear errors.
TEST_F(RunCli, VarlenForwardAndBackward) {
  std::ofstream(dir_ / "varlen.json") << R"({"kind": ["forward", "backward"], "dtype": "float32", "head_dim": 16,
                                            "causal": "bottom_right", "layout": "varlen"})";
  const std::string varlen_spec = (dir_ / "varlen.json").string();
  const std::vector<int32_t> cu_q = {0, 3, 3, 10}, cu_k = {0, 5, 7, 15};  // the second sequence has no query
  std::vector<double> q, k, v, d_out;
  const std::string qf = tensor("q.npy", {10, 4, 16}, 61, ElementType::float32, &q);
  const std::string kf = tensor("k.npy", {15, 2, 16}, 62, ElementType::float32, &k);
  const std::string vf = tensor("v.npy", {15, 2, 16}, 63, ElementType::float32, &v);
  const std::string df = tensor("do.npy", {10, 4, 16}, 64, ElementType::float32, &d_out);
  io::write_npy_atomic(dir_ / "cu_q.npy", NpyArray::from<int32_t>(cu_q, {4}));
  io::write_npy_atomic(dir_ / "cu_k.npy", NpyArray::from<int32_t>(cu_k, {4}));
  const std::vector<std::string> inputs = {"run", varlen_spec, "--q", qf, "--k", kf, "--v", vf, "--cu-seqlens-q",
                                           (dir_ / "cu_q.npy").string(), "--cu-seqlens-k",
                                           (dir_ / "cu_k.npy").string()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = inputs;
    args.insert(args.end(), extra.begin(), extra.end());
    return mfagen(args);
  };
  auto r = with({"--do", df, "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_bwd_f32_d16_causal_br_gqa_varlen:"));
  const fs::path dir(out_dir());
  const NpyArray out = io::read_npy(dir / "out.npy"), lse = io::read_npy(dir / "lse.npy");
  EXPECT_EQ(out.shape, (std::vector<uint64_t>{10, 4, 16}));
  EXPECT_EQ(lse.shape, (std::vector<uint64_t>{4, 10}));
  const std::vector<float> dq = io::read_npy(dir / "dq.npy").values<float>();
  const std::vector<float> dk = io::read_npy(dir / "dk.npy").values<float>();

  reference::PackedBatch batch;
  batch.options = problem_of(1, 4, 2, 1, 1, 16, 16, reference::CausalMode::bottom_right);
  batch.cu_seqlens_q = cu_q;
  batch.cu_seqlens_k = cu_k;
  batch.q = q;
  batch.k = k;
  batch.v = v;
  const std::vector<float> out_values = out.values<float>(), lse_values = lse.values<float>();
  const std::vector<double> out_wide(out_values.begin(), out_values.end()), dq_wide(dq.begin(), dq.end()),
      dk_wide(dk.begin(), dk.end());
  for (uint64_t b = 0; b < 3; ++b) {
    SCOPED_TRACE("sequence " + std::to_string(b));
    const reference::AttentionProblem p = reference::sequence_problem(batch, b);
    if (p.seq_q == 0) continue;
    const uint64_t q0 = uint64_t(cu_q[b]), k0 = uint64_t(cu_k[b]);
    const auto unpack = [](const std::vector<double>& packed, uint64_t heads, uint64_t start, uint64_t length) {
      const std::vector<double> d = reference::unpack_rows(packed, heads, 16, start, length);
      return std::vector<float>(d.begin(), d.end());
    };
    const auto expected = reference::reference_attention(p);
    const auto verdict = reference::check_output(unpack(out_wide, 4, q0, p.seq_q), expected,
                                                 reference::naive_attention_in_dtype(p, ElementType::float32),
                                                 ElementType::float32, p);
    EXPECT_TRUE(verdict.ok) << verdict.detail;
    std::vector<float> lse_b;
    for (uint64_t h = 0; h < 4; ++h)
      for (uint64_t i = 0; i < p.seq_q; ++i) lse_b.push_back(lse_values[h * 10 + q0 + i]);
    const auto lse_verdict = reference::check_lse(lse_b, expected, p);
    EXPECT_TRUE(lse_verdict.ok) << lse_verdict.detail;
    const std::vector<double> d_out_b = reference::unpack_rows(d_out, 4, 16, q0, p.seq_q);
    const auto want = reference::reference_attention_backward(p, d_out_b);
    const auto naive = reference::naive_attention_backward_in_dtype(p, d_out_b, ElementType::float32);
    const auto dq_verdict = reference::check_gradient(unpack(dq_wide, 4, q0, p.seq_q), want.dq, naive.dq,
                                                      ElementType::float32, "dq", {1, 4, p.seq_q, 16});
    EXPECT_TRUE(dq_verdict.ok) << dq_verdict.detail;
    const auto dk_verdict = reference::check_gradient(unpack(dk_wide, 2, k0, p.seq_k), want.dk, naive.dk,
                                                      ElementType::float32, "dk", {1, 2, p.seq_k, 16});
    EXPECT_TRUE(dk_verdict.ok) << dk_verdict.detail;
  }

  // Boundaries that do not fit the packed tensors.
  const struct {
    std::vector<int32_t> cu_q;
    const char* message;
  } bad_calls[] = {
      {{0, 3, 2, 10}, "the entries must not decrease"},
      {{0, 3, 3, 9}, "must equal the rows of the packed tensors (10)"},
      {{1, 3, 3, 10}, "the first sequence starts at row 0"},
      {{0, 10}, "both need B + 1"},
  };
  for (const auto& bad_call : bad_calls) {
    io::write_npy_atomic(dir_ / "bad_cu.npy",
                         NpyArray::from<int32_t>(bad_call.cu_q, {uint64_t(bad_call.cu_q.size())}));
    std::vector<std::string> args = inputs;
    args[9] = (dir_ / "bad_cu.npy").string();  // the file after --cu-seqlens-q
    expect_refused(args, bad_call.message);
  }
  expect_refused({"run", varlen_spec, "--q", qf, "--k", kf, "--v", vf},
                 "expected a 4-d (batch, heads, seq, dim) array");
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// A paged KV cache (spec kv_cache paged): k and v as pages (num_pages,
// page_size, Hkv, D) with --block-table and --cache-seqlens, pages in any
// order and one shared by both sequences; each sequence against the float64
// reference of the keys gathered from its pages; block tables and lengths that
// do not fit the cache are clear errors.
TEST_F(RunCli, PagedCacheDecode) {
  std::ofstream(dir_ / "paged.json") << R"({"kind": "decode", "dtype": "float32", "head_dim": 16,
                                           "causal": "bottom_right", "kv_cache": "paged"})";
  const std::string paged_spec = (dir_ / "paged.json").string();
  std::vector<double> q, k_pages, v_pages;
  const std::string qf = tensor("q.npy", {2, 4, 2, 16}, 71, ElementType::float32, &q);
  const std::string kf = tensor("k.npy", {5, 16, 2, 16}, 72, ElementType::float32, &k_pages);
  const std::string vf = tensor("v.npy", {5, 16, 2, 16}, 73, ElementType::float32, &v_pages);
  reference::PagedCache cache;
  cache.page_size = 16;
  cache.num_pages = 5;
  cache.max_pages = 3;
  cache.heads_kv = 2;
  cache.block_table = {3, 0, 4, 3, 1, -1};  // page 3 is the first block of both; page 2 is spare
  cache.cache_seqlens = {40, 20};
  io::write_npy_atomic(dir_ / "bt.npy", NpyArray::from<int32_t>(cache.block_table, {2, 3}));
  io::write_npy_atomic(dir_ / "cs.npy", NpyArray::from<int32_t>(cache.cache_seqlens, {2}));
  const std::vector<std::string> inputs = {"run", paged_spec, "--q", qf, "--k", kf, "--v", vf, "--block-table",
                                           (dir_ / "bt.npy").string(), "--cache-seqlens", (dir_ / "cs.npy").string()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = inputs;
    args.insert(args.end(), extra.begin(), extra.end());
    return mfagen(args);
  };
  auto r = with({"--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_decode_f32_d16_causal_br_gqa_paged:"));
  const std::vector<float> out = io::read_npy(fs::path(out_dir()) / "out.npy").values<float>();
  for (uint64_t b = 0; b < 2; ++b) {
    SCOPED_TRACE("sequence " + std::to_string(b));
    auto p = problem_of(1, 4, 2, 2, uint64_t(cache.cache_seqlens[b]), 16, 16, reference::CausalMode::bottom_right);
    p.q.assign(q.begin() + b * 4 * 2 * 16, q.begin() + (b + 1) * 4 * 2 * 16);
    p.k = reference::gather_sequence(k_pages, cache, 16, b);
    p.v = reference::gather_sequence(v_pages, cache, 16, b);
    const std::vector<float> got(out.begin() + b * 4 * 2 * 16, out.begin() + (b + 1) * 4 * 2 * 16);
    const auto verdict = reference::check_output(got, reference::reference_attention(p),
                                                 reference::naive_attention_in_dtype(p, ElementType::float32),
                                                 ElementType::float32, p);
    EXPECT_TRUE(verdict.ok) << verdict.detail;
  }

  const struct {
    std::vector<int32_t> table, lengths;
    const char* message;
  } bad_calls[] = {
      {{3, 0, 9, 3, 1, -1}, {40, 20}, "block_table[0][2] = 9 is not a page of the cache (0 .. 4)"},
      {{3, 0, 4, 3, 1, -1}, {49, 20}, "cache_seqlens[0] = 49 must be between 0 and 48"},
      {{3, 0, 4, 3, -1, -1}, {40, 20}, "block_table[1][1] = -1 is not a page of the cache"},
  };
  for (const auto& bad_call : bad_calls) {
    io::write_npy_atomic(dir_ / "bt_bad.npy", NpyArray::from<int32_t>(bad_call.table, {2, 3}));
    io::write_npy_atomic(dir_ / "cs_bad.npy", NpyArray::from<int32_t>(bad_call.lengths, {2}));
    std::vector<std::string> args = inputs;
    args[9] = (dir_ / "bt_bad.npy").string();
    args[11] = (dir_ / "cs_bad.npy").string();
    expect_refused(args, bad_call.message);
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// A serving step (spec layout varlen, kv_cache paged): packed q with
// --cu-seqlens-q only, against a paged cache; a prefill chunk and a decode,
// each the last queries of its cache (bottom-right), judged against the
// float64 reference of its gathered keys; --cu-seqlens-k and query counts
// that disagree with the cache are clear errors.
TEST_F(RunCli, PackedQueriesOnAPagedCache) {
  std::ofstream(dir_ / "step.json") << R"({"dtype": "float32", "head_dim": 16, "causal": "bottom_right",
                                          "layout": "varlen", "kv_cache": "paged"})";
  const std::string step_spec = (dir_ / "step.json").string();
  const std::vector<int32_t> cu_q = {0, 5, 6};  // a chunk of 5 queries, then a decode
  std::vector<double> q, k_pages, v_pages;
  const std::string qf = tensor("q.npy", {6, 4, 16}, 81, ElementType::float32, &q);
  const std::string kf = tensor("k.npy", {5, 16, 2, 16}, 82, ElementType::float32, &k_pages);
  const std::string vf = tensor("v.npy", {5, 16, 2, 16}, 83, ElementType::float32, &v_pages);
  reference::PagedCache cache;
  cache.page_size = 16;
  cache.num_pages = 5;
  cache.max_pages = 3;
  cache.heads_kv = 2;
  cache.block_table = {3, 0, 4, 3, 1, -1};  // page 3 is the first block of both
  cache.cache_seqlens = {40, 20};
  io::write_npy_atomic(dir_ / "cu_q.npy", NpyArray::from<int32_t>(cu_q, {3}));
  io::write_npy_atomic(dir_ / "bt.npy", NpyArray::from<int32_t>(cache.block_table, {2, 3}));
  io::write_npy_atomic(dir_ / "cs.npy", NpyArray::from<int32_t>(cache.cache_seqlens, {2}));
  const std::vector<std::string> inputs = {"run", step_spec, "--q", qf, "--k", kf, "--v", vf,
                                           "--cu-seqlens-q", (dir_ / "cu_q.npy").string(),
                                           "--block-table", (dir_ / "bt.npy").string(),
                                           "--cache-seqlens", (dir_ / "cs.npy").string()};
  std::vector<std::string> args = inputs;
  args.insert(args.end(), {"--out-dir", out_dir()});
  auto r = mfagen(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("attn_fwd_f32_d16_causal_br_gqa_varlen_paged:"));
  const NpyArray out = io::read_npy(fs::path(out_dir()) / "out.npy"), lse = io::read_npy(fs::path(out_dir()) / "lse.npy");
  EXPECT_EQ(out.shape, (std::vector<uint64_t>{6, 4, 16}));
  EXPECT_EQ(lse.shape, (std::vector<uint64_t>{4, 6}));
  const std::vector<float> out_values = out.values<float>();
  const std::vector<double> out_wide(out_values.begin(), out_values.end());
  for (uint64_t b = 0; b < 2; ++b) {
    SCOPED_TRACE("sequence " + std::to_string(b));
    const uint64_t q0 = uint64_t(cu_q[b]), rows = uint64_t(cu_q[b + 1] - cu_q[b]);
    auto p = problem_of(1, 4, 2, rows, uint64_t(cache.cache_seqlens[b]), 16, 16, reference::CausalMode::bottom_right);
    p.q = reference::unpack_rows(q, 4, 16, q0, rows);
    p.k = reference::gather_sequence(k_pages, cache, 16, b);
    p.v = reference::gather_sequence(v_pages, cache, 16, b);
    const std::vector<double> got = reference::unpack_rows(out_wide, 4, 16, q0, rows);
    const auto verdict = reference::check_output(std::vector<float>(got.begin(), got.end()),
                                                 reference::reference_attention(p),
                                                 reference::naive_attention_in_dtype(p, ElementType::float32),
                                                 ElementType::float32, p);
    EXPECT_TRUE(verdict.ok) << verdict.detail;
  }

  io::write_npy_atomic(dir_ / "cu_k.npy", NpyArray::from<int32_t>(std::vector<int32_t>{0, 40, 60}, {3}));
  args = inputs;
  args.insert(args.end(), {"--cu-seqlens-k", (dir_ / "cu_k.npy").string()});
  expect_refused(args, "on a paged cache each sequence's keys are its --cache-seqlens");
  io::write_npy_atomic(dir_ / "cu_q3.npy", NpyArray::from<int32_t>(std::vector<int32_t>{0, 2, 5, 6}, {4}));
  args = inputs;
  args[9] = (dir_ / "cu_q3.npy").string();
  expect_refused(args, "expected shape (3, max_pages >= 1), found (2, 3)");  // one block table row per sequence
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// Quantized caches (spec kv_dtype): k and v as .npy of their raw stored rows
// (uint8, the last axis a row's bytes), dense and paged, the format taken from
// the set or --kv-dtype, fp8 with --k-scale and --v-scale; against the
// float64 reference of the dequantized rows. Raw rows that are not whole
// blocks, or that hold another head dim, are clear errors.
TEST_F(RunCli, QuantizedCaches) {
  std::ofstream(dir_ / "quant.json") << R"({"kernels": [
      {"kind": "decode", "dtype": "float16", "head_dim": 64, "causal": "bottom_right", "kv_dtype": "q8_0"},
      {"kind": "forward", "dtype": "float16", "head_dim": 64, "causal": "bottom_right",
       "kv_dtype": ["q4_0", "fp8_e4m3"]}]})";
  const std::string quant_spec = (dir_ / "quant.json").string();
  const uint64_t hq = 4, hkv = 2, sq = 3, sk = 70, d = 64;
  std::vector<double> q;
  const std::string qf = tensor("q.npy", {1, hq, sq, d}, 81, ElementType::float16, &q);
  const struct {
    reference::KvQuant format;
    std::vector<std::string> options;
    double k_scale, v_scale;
    const char* kernel;
  } calls[] = {
      {reference::KvQuant::q8_0, {"--kv-dtype", "q8_0"}, 1, 1, "attn_decode_f16_d64_causal_br_gqa_kv_q8_0:"},
      {reference::KvQuant::q4_0, {"--kv-dtype", "q4_0"}, 1, 1, "attn_fwd_f16_d64_causal_br_gqa_kv_q4_0:"},
      {reference::KvQuant::fp8_e4m3, {"--kv-dtype", "fp8_e4m3", "--k-scale", "0.0625", "--v-scale", "0.03125"},
       0.0625, 0.03125, "attn_fwd_f16_d64_causal_br_gqa_kv_fp8_e4m3:"},
  };
  for (const auto& call : calls) {
    SCOPED_TRACE(std::string(reference::to_string(call.format)));
    const uint64_t rows = hkv * sk, row_bytes = reference::quantized_row_bytes(call.format, d);
    const std::vector<double> k_values = reference::random_tensor(rows * d, 82, ElementType::float32);
    const std::vector<double> v_values = reference::random_tensor(rows * d, 83, ElementType::float32);
    const std::vector<uint8_t> k_rows = reference::quantize_rows(call.format, k_values, rows, d, call.k_scale);
    const std::vector<uint8_t> v_rows = reference::quantize_rows(call.format, v_values, rows, d, call.v_scale);
    io::write_npy_atomic(dir_ / "kq.npy", NpyArray::from<uint8_t>(k_rows, {1, hkv, sk, row_bytes}));
    io::write_npy_atomic(dir_ / "vq.npy", NpyArray::from<uint8_t>(v_rows, {1, hkv, sk, row_bytes}));
    std::vector<std::string> args = {"run", quant_spec, "--q", qf, "--k", (dir_ / "kq.npy").string(), "--v",
                                     (dir_ / "vq.npy").string(), "--out-dir", out_dir()};
    args.insert(args.end(), call.options.begin(), call.options.end());
    const auto r = mfagen(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(call.kernel));
    auto p = problem_of(1, hq, hkv, sq, sk, d, d, reference::CausalMode::bottom_right);
    p.q = q;
    p.k = reference::dequantize_rows(call.format, k_rows, rows, d, call.k_scale);
    p.v = reference::dequantize_rows(call.format, v_rows, rows, d, call.v_scale);
    reference::AttentionProblem in_half = p;  // the yardstick dequantizes into float16
    in_half.k = reference::rounded_to(in_half.k, ElementType::float16);
    in_half.v = reference::rounded_to(in_half.v, ElementType::float16);
    const auto verdict = reference::check_output(io::read_npy(fs::path(out_dir()) / "out.npy").values<float>(),
                                                 reference::reference_attention(p),
                                                 reference::naive_attention_in_dtype(in_half, ElementType::float16),
                                                 ElementType::float16, p);
    EXPECT_TRUE(verdict.ok) << verdict.detail;
  }

  // Rows that are not whole blocks, rows of another head dim, a float k for a
  // quantized format, a scale for a cache that is not fp8.
  const std::vector<uint8_t> ragged(1 * hkv * sk * 70);
  io::write_npy_atomic(dir_ / "ragged.npy", NpyArray::from<uint8_t>(ragged, {1, hkv, sk, 70}));
  const std::vector<uint8_t> narrow(1 * hkv * sk * 34);
  io::write_npy_atomic(dir_ / "narrow.npy", NpyArray::from<uint8_t>(narrow, {1, hkv, sk, 34}));
  std::vector<double> unused;
  const std::string kf = tensor("kf.npy", {1, hkv, sk, d}, 84, ElementType::float16, &unused);
  const struct {
    std::string k, v;
    std::vector<std::string> options;
    const char* message;
  } bad_calls[] = {
      {"ragged.npy", "ragged.npy", {"--kv-dtype", "q8_0"},
       "ragged.npy: shape (1, 2, 70, 70): the last axis, 70 bytes, is not whole q8_0 rows (34 bytes per block of 32 "
       "values)"},
      {"narrow.npy", "narrow.npy", {"--kv-dtype", "q8_0"},
       "(q8_0 rows of 34 bytes = 32 values) has shape (1, 2, 70, 32): head_dim (the last dimension of q and k) must "
       "match"},
      {"kf.npy", "kf.npy", {"--kv-dtype", "q4_0"},
       "a q4_0 cache is its raw stored rows as uint8 (|u1), the last axis a row's bytes (18 bytes per block of 32 "
       "values); found dtype <f4"},
      {"narrow.npy", "narrow.npy", {},
       "k or v holds raw bytes (uint8) and the spec set has kernels for several quantized formats: say which with "
       "--kv-dtype"},
      {"kf.npy", "kf.npy", {"--k-scale", "2"}, "--k-scale and --v-scale scale fp8_e4m3 caches"},
  };
  for (const auto& bad_call : bad_calls) {
    std::vector<std::string> args = {"run", quant_spec, "--q", qf, "--k", (dir_ / bad_call.k).string(), "--v",
                                     (dir_ / bad_call.v).string()};
    args.insert(args.end(), bad_call.options.begin(), bad_call.options.end());
    expect_refused(args, bad_call.message);
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

// `--backend metal` runs the same generated kernel through the Metal backend
// (here on the metal-cpp stand-in, which dispatches on the cpu backend): the
// same bytes as the cpu backend. Skipped in builds without it.
TEST_F(RunCli, MetalBackendWritesWhatTheCpuBackendWrites) {
  std::vector<double> x;
  const std::string q = tensor("q.npy", {1, 4, 19, 64}, 1, ElementType::float16, &x);
  const std::string k = tensor("k.npy", {1, 2, 33, 64}, 2, ElementType::float16, &x);
  const std::string v = tensor("v.npy", {1, 2, 33, 64}, 3, ElementType::float16, &x);
  const std::vector<std::string> inputs = {"run", spec(), "--q", q, "--k", k, "--v", v, "--causal", "bottom_right"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = inputs;
    args.insert(args.end(), extra.begin(), extra.end());
    return mfagen(args);
  };
  const auto metal = with({"--backend", "metal", "--out-dir", (dir_ / "metal").string()});
  if (metal.exit_code == 1 && metal.err.find("has no Metal backend") != std::string::npos)
    GTEST_SKIP() << "this build has no Metal backend";
  ASSERT_EQ(metal.exit_code, 0) << metal.err;
  EXPECT_THAT(metal.out, HasSubstr("on the metal backend"));
  const auto cpu = with({"--out-dir", (dir_ / "cpu").string()});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  for (const char* file : {"out.npy", "lse.npy"})
    EXPECT_EQ(io::read_npy(dir_ / "metal" / file).data, io::read_npy(dir_ / "cpu" / file).data) << file;
}

TEST_F(RunCli, ErrorsNameTheProblemAndWriteNothing) {
  std::vector<double> x;
  const std::string q = tensor("q.npy", {1, 4, 8, 64}, 1, ElementType::float16, &x);
  const std::string k = tensor("k.npy", {1, 2, 8, 64}, 2, ElementType::float16, &x);
  const std::string v = tensor("v.npy", {1, 2, 8, 64}, 3, ElementType::float16, &x);
  const std::string k3 = tensor("k3.npy", {1, 3, 8, 64}, 2, ElementType::float16, &x);
  const std::string v_short = tensor("v_short.npy", {1, 2, 7, 64}, 3, ElementType::float16, &x);
  const std::string k48 = tensor("k48.npy", {1, 2, 8, 48}, 2, ElementType::float16, &x);
  const std::string q3d = tensor("q3d.npy", {4, 8, 64}, 1, ElementType::float16, &x);
  io::write_npy_atomic(dir_ / "qi.npy", NpyArray::from<int32_t>(std::vector<int32_t>(4 * 8 * 64), {1, 4, 8, 64}));
  const std::string qi = (dir_ / "qi.npy").string();

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--q", q, "--k", v_short, "--v", v}, "must match"},
      {{"--q", q, "--k", k3, "--v", k3}, "the q heads must be a multiple of the kv heads"},
      {{"--q", q, "--k", k48, "--v", v}, "head_dim (the last dimension of q and k) must match"},
      {{"--q", q3d, "--k", k, "--v", v}, "expected a 4-d (batch, heads, seq, dim) array, found shape (4, 8, 64)"},
      {{"--q", qi, "--k", k, "--v", v}, "dtype <i4 is not supported; expected <f4, <f2 or <f8"},
      {{"--q", (dir_ / "missing.npy").string(), "--k", k, "--v", v}, "missing.npy"},
      {{"--q", q, "--k", k, "--v", v, "--dtype", "float32"}, "has no kernel for this call (head_dim 64, head_dim_v 64, 4 q heads over 2 kv heads, 8 queries, dtype float32)"},
      {{"--q", q, "--k", k, "--v", v, "--mask", q}, "has no kernel for this call"},
      {{"--q", q, "--k", k, "--v", v, "--do", q}, "dO (backward)"},  // no backward kernel with head_dim 64
      {{"--q", q, "--k", k, "--v", v, "--backend", "vulkan"}, "--backend vulkan: expected cpu or metal"},
      {{"--q", q, "--k", k, "--v", v, "--scale=-1"}, "--scale -1: expected a finite number > 0"},
      {{"--q", q, "--k", k, "--v", v, "--causal", "diagonal"}, "--causal diagonal: not a valid value"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"run", spec()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), {"--out-dir", out_dir()});
    const auto r = mfagen(args);
    EXPECT_EQ(r.exit_code, 1) << c.message << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(out_dir())) << c.message;
  }
  // A bad spec file is reported with its path.
  std::ofstream(dir_ / "bad.json") << R"({"dtype": "float16", "head_dim": 600})";
  const auto r = mfagen({"run", (dir_ / "bad.json").string(), "--q", q, "--k", k, "--v", v, "--out-dir", out_dir()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("bad.json: head_dim: expected an integer in 1..576, found 600"));
}

}  // namespace
}  // namespace mfagen
