// `mfagen exec` end to end: the built binary runs kernels/*.metal on .npy
// buffers written here, and results are compared with plain C++ references.
// Error cases check the exit status and that the message names the problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <string>
#include <vector>

#include "io/npy.h"
#include "mfagen_cli_test.h"

namespace mfagen {
namespace {

namespace fs = std::filesystem;
using io::NpyArray;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kKernels = fs::path(MFAGEN_TEST_DATA_DIR) / "kernels";

class ExecCli : public test::MfagenCliTest {
 protected:
  // Writes an input array and returns its path as an argument.
  std::string input(const std::string& name, const NpyArray& array) {
    fs::path path = dir_ / name;
    io::write_npy_atomic(path, array);
    return path.string();
  }
  template <class T>
  std::string input(const std::string& name, std::vector<T> values, std::vector<uint64_t> shape) {
    return input(name, NpyArray::from<T>(values, std::move(shape)));
  }

  std::string out_dir() const { return (dir_ / "out").string(); }
  NpyArray output(uint32_t index) const { return io::read_npy(dir_ / "out" / ("buffer" + std::to_string(index) + ".npy")); }

  // `mfagen exec ARGS...`
  test::ProcessResult exec(std::vector<std::string> args) {
    args.insert(args.begin(), "exec");
    return mfagen(std::move(args));
  }
  // `mfagen ARGS...`
  test::ProcessResult mfagen(std::vector<std::string> args) {
    test::ProcessResult result = MfagenCliTest::mfagen(std::move(args));
    // Every failure must say why.
    if (result.exit_code != 0) {
      EXPECT_FALSE(result.err.empty()) << "silent failure";
    }
    return result;
  }

  // saxpy inputs: values chosen so a*x+y is exact with or without FMA.
  static constexpr uint32_t kN = 256;
  std::vector<float> x_, y_;
  float a_ = 2.5f;
  // FILE --entry saxpy --threadgroups 4 --threads-per-threadgroup 64
  // --buffer 0=x --buffer 1=y --buffer 2=a --out-dir DIR (indices 0..14)
  std::vector<std::string> saxpy_args() {
    x_.clear();
    y_.clear();
    for (uint32_t i = 0; i < kN; ++i) {
      x_.push_back(0.5f * float(i));
      y_.push_back(1.0f - float(i));
    }
    return {(kKernels / "saxpy.metal").string(),
            "--entry", "saxpy",
            "--threadgroups", "4",
            "--threads-per-threadgroup", "64",
            "--buffer", "0=" + input<float>("x.npy", x_, {kN}),
            "--buffer", "1=" + input<float>("y.npy", y_, {kN}),
            "--buffer", "2=" + input<float>("a.npy", {a_}, {}),
            "--out-dir", out_dir()};
  }
  void expect_saxpy_result() {
    NpyArray y = output(1);
    EXPECT_EQ(y.shape, std::vector<uint64_t>{kN});
    std::vector<float> got = y.values<float>();
    ASSERT_EQ(got.size(), kN);
    for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(got[i], a_ * x_[i] + y_[i]) << "element " << i;
    // Inputs are written back unchanged, with their dtype and shape.
    EXPECT_EQ(output(0).values<float>(), x_);
    NpyArray a = output(2);
    EXPECT_TRUE(a.shape.empty());
    EXPECT_EQ(a.values<float>(), std::vector<float>{a_});
  }
};

TEST_F(ExecCli, SaxpyMatchesReference) {
  auto r = exec(saxpy_args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_saxpy_result();
  // One summary line: kernel, grid, traffic.
  EXPECT_THAT(r.out, AllOf(HasSubstr("saxpy"), HasSubstr("4x1x1 threadgroups of 64x1x1 threads"),
                           HasSubstr("written 1024"), HasSubstr("no findings")));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(ExecCli, StatsPrintPerBufferTraffic) {
  auto args = saxpy_args();
  args.push_back("--stats");
  auto r = exec(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("compile:"), HasSubstr("buffer(0) x: <f4 (256,)"),
                           HasSubstr("buffer(1) y: <f4 (256,), 1024 bytes, read 1024, written 1024"),
                           HasSubstr("buffer(2) a")));
}

TEST_F(ExecCli, RunsWithoutDetectorsAndWithOneWorker) {
  auto args = saxpy_args();
  args.insert(args.end(), {"--no-detectors", "--workers", "1"});
  auto r = exec(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_saxpy_result();
  EXPECT_THAT(r.out, HasSubstr("not counted"));
}

TEST_F(ExecCli, VectorsStructsAndFunctionConstants) {
  // half bits of 1, 2, -0.5, 0.25, repeated; the kernel reads them as half4.
  std::vector<uint16_t> in_bits;
  const uint16_t halves[4] = {0x3c00, 0x4000, 0xb800, 0x3400};
  const float values[4] = {1.0f, 2.0f, -0.5f, 0.25f};
  for (int i = 0; i < 16; ++i) in_bits.push_back(halves[i % 4]);
  NpyArray in{"<f2", {4, 4}, {}};
  in.data.resize(in_bits.size() * 2);
  std::memcpy(in.data.data(), in_bits.data(), in.data.size());

  // struct Params { uint n; float scale; } as raw bytes: structs take any dtype.
  struct {
    uint32_t n = 3;
    float scale = 4.0f;
  } params;
  NpyArray p{"|u1", {sizeof(params)}, {}};
  p.data.resize(sizeof(params));
  std::memcpy(p.data.data(), &params, sizeof(params));

  auto r = exec({(kKernels / "scale4.metal").string(), "--entry", "scale4", "--threadgroups", "1",
                   "--threads-per-threadgroup", "4", "--constant", "0=true:bool", "--buffer",
                   "0=" + input("in.npy", in), "--buffer",
                   "1=" + input<float>("out.npy", std::vector<float>(16, -7.0f), {4, 4}), "--buffer",
                   "2=" + input("params.npy", p), "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<float> got = output(1).values<float>();
  ASSERT_EQ(got.size(), 16u);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(got[i], i < 12 ? values[i % 4] * 4.0f + 1.0f : -7.0f) << "element " << i;
  EXPECT_EQ(output(2).data, p.data);
  EXPECT_EQ(output(0).dtype, "<f2");
}

TEST_F(ExecCli, TensorLayoutSeedMovesCooperativeTensorSlots) {
  auto args = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {(kKernels / "slot_positions.metal").string(),
                                  "--entry", "slot_positions",
                                  "--threadgroups", "1",
                                  "--threads-per-threadgroup", "32",
                                  "--buffer", "0=" + input<float>("out.npy", std::vector<float>(256, -1.0f), {256}),
                                  "--out-dir", out_dir()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // The default layout: MLX NAX's 16 x 16 fragment (steel/attn/nax.h).
  auto r = exec(args({}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<float> fixed = output(0).values<float>();
  int at_fragment_position = 0;
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 8; ++j) {
      const int qid = lane >> 2, fm = (qid & 4) | ((lane >> 1) & 3), fn = ((qid & 2) | (lane & 1)) * 4;
      at_fragment_position += fixed[(fm + 8 * (j / 4)) * 16 + fn + j % 4] == float(lane * 100 + j);
    }
  EXPECT_EQ(at_fragment_position, 256);
  fs::remove_all(dir_ / "out");
  r = exec(args({"--tensor-layout-seed", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<float> permuted = output(0).values<float>();
  int moved = 0;
  for (int i = 0; i < 256; ++i) moved += permuted[i] != fixed[i];
  EXPECT_GT(moved, 200) << "--tensor-layout-seed 3 leaves most slots where they were";
  std::vector<float> sorted_fixed = fixed, sorted_permuted = permuted;
  std::sort(sorted_fixed.begin(), sorted_fixed.end());
  std::sort(sorted_permuted.begin(), sorted_permuted.end());
  EXPECT_EQ(sorted_fixed, sorted_permuted) << "a permutation: every slot still lands once";
}

TEST_F(ExecCli, ThreadgroupMemoryReduction) {
  std::vector<float> in(256);
  for (int i = 0; i < 256; ++i) in[i] = float(i % 7) - 3.0f;
  std::vector<float> expected(4, 0.0f);
  for (int i = 0; i < 256; ++i) expected[i / 64] += in[i];
  auto r = exec({(kKernels / "block_sum.metal").string(), "--entry", "block_sum", "--threadgroups", "4",
                   "--threads-per-threadgroup", "64", "--threadgroup-bytes", "0=256", "--buffer",
                   "0=" + input<float>("in.npy", in, {256}), "--buffer",
                   "1=" + input<float>("out.npy", std::vector<float>(4, 0.0f), {4}), "--out-dir", out_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(output(1).values<float>(), expected);
}

TEST_F(ExecCli, MissingThreadgroupBytes) {
  auto r = exec({(kKernels / "block_sum.metal").string(), "--entry", "block_sum", "--threadgroups", "1",
                   "--threads-per-threadgroup", "64", "--buffer",
                   "0=" + input<float>("in.npy", std::vector<float>(64), {64}), "--buffer",
                   "1=" + input<float>("out.npy", {0.0f}, {1}), "--out-dir", out_dir()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("--threadgroup-bytes"), HasSubstr("scratch")));
}

TEST_F(ExecCli, MissingEntryPointListsKernels) {
  auto args = saxpy_args();
  args[2] = "saxpy2";
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("no kernel `saxpy2`"), HasSubstr("`saxpy`"), HasSubstr("`fill`")));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "buffer1.npy"));
}

TEST_F(ExecCli, BufferIndexNotUsedByKernel) {
  auto args = saxpy_args();
  args.insert(args.end(), {"--buffer", "7=" + input<float>("z.npy", {1.0f}, {1})});
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("--buffer 7="), HasSubstr("no [[buffer(7)]]"), HasSubstr("0 (x), 1 (y), 2 (a)")));
}

TEST_F(ExecCli, WrongDtypeForBuffer) {
  auto args = saxpy_args();
  args[8] = "0=" + input<double>("x64.npy", std::vector<double>(kN), {kN});
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("--buffer 0="), HasSubstr("x [[buffer(0)]]"), HasSubstr("<f4"),
                           HasSubstr("<f8")));
}

TEST_F(ExecCli, ScalarReferenceNeedsOneElement) {
  auto args = saxpy_args();
  args[12] = "2=" + input<float>("a3.npy", {1.0f, 2.0f, 3.0f}, {3});
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("[[buffer(2)]]"), HasSubstr("single value")));
}

TEST_F(ExecCli, MissingBuffer) {
  auto args = saxpy_args();
  args.erase(args.begin() + 11, args.begin() + 13);  // --buffer 2=a.npy
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("needs a --buffer"), HasSubstr("a [[buffer(2)]]")));
}

TEST_F(ExecCli, GridOfZero) {
  auto args = saxpy_args();
  args[4] = "0";
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("--threadgroups"), HasSubstr("dimension x is 0")));

  args = saxpy_args();
  args[6] = "64,0";
  r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("--threads-per-threadgroup"), HasSubstr("dimension y is 0")));
}

TEST_F(ExecCli, TooManyThreadsPerThreadgroup) {
  auto args = saxpy_args();
  args[6] = "64,32";
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("2048 threads"), HasSubstr("at most 1024")));
}

TEST_F(ExecCli, CompileErrorShowsClangMessageWithLine) {
  auto r = exec({(kKernels / "syntax_error.metal").string(), "--entry", "broken", "--threadgroups", "1",
                   "--threads-per-threadgroup", "1", "--buffer", "0=" + input<float>("y.npy", {0.0f}, {1}),
                   "--out-dir", out_dir()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("syntax_error.metal:6:"), HasSubstr("error")));
}

TEST_F(ExecCli, OutOfBoundsFindingFailsTheRun) {
  auto r = exec({(kKernels / "out_of_bounds.metal").string(), "--entry", "shift_right", "--threadgroups", "2",
                   "--threads-per-threadgroup", "32", "--buffer",
                   "0=" + input<float>("x.npy", std::vector<float>(64, 1.0f), {64}), "--buffer",
                   "1=" + input<float>("y.npy", std::vector<float>(64, 0.0f), {64}), "--out-dir", out_dir()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("out-of-bounds"), HasSubstr("shift_right"), HasSubstr("out_of_bounds.metal:9")));
  EXPECT_THAT(r.out, AllOf(HasSubstr("finding"), Not(HasSubstr("no findings"))));
  // The buffers are still written back for inspection; in-bounds writes landed.
  std::vector<float> y = output(1).values<float>();
  ASSERT_EQ(y.size(), 64u);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[63], 1.0f);
}

TEST_F(ExecCli, FunctionConstantErrors) {
  auto base = [&](std::string constant) {
    return std::vector<std::string>{(kKernels / "scale4.metal").string(), "--entry", "scale4", "--threadgroups", "1",
                                    "--threads-per-threadgroup", "1", "--constant", constant, "--buffer",
                                    "0=" + input<float>("in.npy", std::vector<float>(4), {4}), "--out-dir", out_dir()};
  };
  auto r = exec(base("3=true:bool"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("[[function_constant(3)]]"), HasSubstr("add_bias")));
  r = exec(base("0=1:int"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("add_bias"), HasSubstr("bool")));
  r = exec(base("0=maybe:bool"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'maybe'"));
  r = exec(base("0=true"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("VALUE:TYPE"));
}

TEST_F(ExecCli, BadInputFiles) {
  auto args = saxpy_args();
  std::string not_npy = (dir_ / "not.npy").string();
  std::ofstream(not_npy) << "x,y\n1,2\n";
  args[8] = "0=" + not_npy;
  auto r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("not.npy"), HasSubstr("bad magic")));

  args[8] = "0=" + (dir_ / "missing.npy").string();
  r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("missing.npy"), HasSubstr("no such file")));

  args = saxpy_args();
  args[0] = (dir_ / "missing.metal").string();
  r = exec(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing.metal"));
}

TEST_F(ExecCli, UsageErrorsHelpAndVersion) {
  auto r = mfagen({"exec", "--entry", "saxpy"});
  EXPECT_EQ(r.exit_code, 1);
  r = mfagen({"frobnicate"});
  EXPECT_EQ(r.exit_code, 1);
  r = mfagen({});
  EXPECT_EQ(r.exit_code, 1);
  auto args = saxpy_args();
  args.push_back("--no-such-option");
  r = exec(args);
  EXPECT_EQ(r.exit_code, 1);

  r = mfagen({"exec", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, AllOf(HasSubstr("--threadgroups"), HasSubstr("--buffer"), HasSubstr("bfloat")));
  r = mfagen({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("exec"));
  r = mfagen({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("mfagen "));
}

}  // namespace
}  // namespace mfagen
