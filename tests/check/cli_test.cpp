// `mfagen check` end to end: the built binary on generated kernels, on a
// kernel breaking rules, and on a syntactically broken file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../cli/run_process.h"

namespace mfagen::check {
namespace {

namespace fs = std::filesystem;

class CheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mfagen_check_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  test::ProcessResult mfagen(std::vector<std::string> args) {
    args.insert(args.begin(), MFAGEN_EXE);
    return test::run_process(args, dir_);
  }

  fs::path dir_;
};

TEST_F(CheckCli, SyntaxErrorIsReportedWithItsLocation) {
  fs::path file = write("broken.metal",
                        "#include <metal_stdlib>\nusing namespace metal;\n"
                        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                        "  out[i] = 1.0f\n}\n");
  test::ProcessResult r = mfagen({"check", file.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(file.string() + ":4:16: error: expected ';' after expression [compile-error]"),
            std::string::npos)
      << r.err;
}

TEST_F(CheckCli, GarbageIsAnErrorNotACrash) {
  fs::path file = write("garbage.metal", std::string("\x01\x02 kernel void ((( [[[ }}} \"unterminated\n", 40));
  test::ProcessResult r = mfagen({"check", file.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(file.string() + ":1:"), std::string::npos) << r.err;
}

// A directory or a missing file is a user's mistake named as such, for
// check and for list (they read their inputs the same way).
TEST_F(CheckCli, ADirectoryOrAMissingFileIsAClearError) {
  const fs::path missing = dir_ / "missing.metal";
  for (const std::string& command : {"check", "list"}) {
    SCOPED_TRACE(command);
    test::ProcessResult r = mfagen({command, dir_.string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(dir_.string() + ": cannot read the file: Is a directory"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    r = mfagen({command, missing.string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(missing.string() + ": cannot read the file: No such file or directory"), std::string::npos)
        << r.err;
  }
}

TEST_F(CheckCli, RuleFindingsExitOne) {
  fs::path file = write("rules.metal",
                        "#include <metal_stdlib>\n#include <cmath>\nusing namespace metal;\n"
                        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                        "  double d = out[i];\n  out[i] = d;\n}\n");
  test::ProcessResult r = mfagen({"check", file.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(file.string() + ":2:10: error: 'cmath' is not a Metal header"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(file.string() + ":5:3: error: 'double' is not supported by Metal (use float) [double]"),
            std::string::npos)
      << r.err;
}

// A file's own headers, found as Metal's compiler finds them: a quoted one
// next to the including file (also inside another header's directory), an
// angled one and a quoted one through -I. They are checked with the file:
// the kernel uses what they define, and the file is clean.
TEST_F(CheckCli, OwnHeadersNextToTheFileAndThroughMinusIAreCheckedWithIt) {
  fs::create_directories(dir_ / "lib" / "ops");
  fs::create_directories(dir_ / "include" / "proj");
  write("lib/ops/scale.h", "#pragma once\n#include \"twice.h\"\ninline float scale(float x) { return twice(x) * 3.0f; }\n");
  // What a header keeps for C hosts, in a block the preprocessor skips for Metal, is not checked.
  write("lib/ops/twice.h",
        "#pragma once\n#if defined(HOST_C_API)\n#include <stdint.h>\ninline int64_t host_only() { return std::abs(1); }\n"
        "#endif\ninline float twice(float x) { return 2.0f * x; }\n");
  write("include/proj/bias.h", "#pragma once\ninline float bias() { return 0.5f; }\n");
  write("include/proj/shift.h",
        "#pragma once\n#include <metal_stdlib>\ninline float shift(device const float* p) { return p[1]; }\n");
  fs::path file = write("own.metal",
                        "#include <metal_stdlib>\n#include \"lib/ops/scale.h\"\n#include <proj/bias.h>\n"
                        "#include \"proj/shift.h\"\n#ifdef HOST_C_API\n#include <cstdint>\n#endif\n"
                        "using namespace metal;\n"
                        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                        "  out[i] = scale(out[i]) + bias() + shift(out);\n}\n");
  test::ProcessResult r = mfagen({"check", "-I", (dir_ / "include").string(), file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find(file.string() + ": ok (1 kernel,"), std::string::npos) << r.out;
  // Without -I the angled and the -I quoted header are not found: include findings at their lines.
  test::ProcessResult without = mfagen({"check", file.string()});
  EXPECT_EQ(without.exit_code, 1);
  EXPECT_NE(without.err.find(file.string() + ":3:10: error: 'proj/bias.h' is not a Metal header, and no such file "
                                             "is in an -I directory"),
            std::string::npos)
      << without.err;
  EXPECT_NE(without.err.find(file.string() + ":4:10: error: 'proj/shift.h' is not a Metal header, and no such "
                                             "file is next to the including file or in an -I directory"),
            std::string::npos)
      << without.err;
}

// The valid Metal that clang rejects and both lowerings repair from its
// diagnostics (a braced list for a vector parameter, a scalar of higher
// rank than a vector's elements, a conditional across address spaces) is
// repaired in the file's own headers too (MLX's unary.h, binary_ops.h).
TEST_F(CheckCli, ValidMetalIsRepairedInAnOwnHeaderToo) {
  write("ops.h",
        "#pragma once\n#include <metal_stdlib>\nusing namespace metal;\n"
        "inline uint at(uint3 e, uint w) { return e.x + e.y * w; }\n"
        "template <typename T> T halve(vec<T, 2> v) { return (0.5 * v).x; }\n"
        "inline float pick(threadgroup bfloat* tg, bool c, int i) { return float(c ? tg[i] : bfloat(0)); }\n"
        "inline uint placed(uint3 g, uint w) { return at({2 * g.x, g.y, 0u}, w); }\n");
  fs::path file = write("uses_ops.metal",
                        "#include \"ops.h\"\n"
                        "kernel void k(device float* out [[buffer(0)]], uint3 g [[thread_position_in_grid]],\n"
                        "              uint l [[thread_position_in_threadgroup]]) {\n"
                        "  threadgroup bfloat tg[4];\n"
                        "  tg[l % 4] = bfloat(1.0f);\n"
                        "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                        "  out[placed(g, 8)] = halve<half>(half2(1.0h, 2.0h)) + pick(tg, true, int(l % 4));\n}\n");
  test::ProcessResult r = mfagen({"check", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(file.string() + ": ok (1 kernel,"), std::string::npos) << r.out << r.err;
}

// Metal's rules hold in the file's own headers too, and their findings and
// clang's errors name the header, at the line and column written there.
TEST_F(CheckCli, FindingsInAnOwnHeaderNameTheHeader) {
  fs::path header = write("helpers.h",
                          "#pragma once\n"
                          "inline float widen(device const float* p) {\n"
                          "  double d = p[0];\n"
                          "  return float(d) + missing_name;\n"
                          "}\n");
  fs::path file = write("uses.metal",
                        "#include <metal_stdlib>\n#include \"helpers.h\"\nusing namespace metal;\n"
                        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                        "  out[i] = widen(out);\n}\n");
  test::ProcessResult r = mfagen({"check", file.string()});
  EXPECT_EQ(r.exit_code, 1);
  const std::string at = fs::absolute(header).lexically_normal().string();
  EXPECT_NE(r.err.find(at + ":3:3: error: 'double' is not supported by Metal (use float) [double]"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(at + ":4:21: error: use of undeclared identifier 'missing_name' [compile-error]"),
            std::string::npos)
      << r.err;
}

// The checker agrees with the cpu backend (issue 35): every construct of
// the peers' kernels that tests/cpu/peer_constructs_test.cpp runs against
// exact results is valid Metal to `mfagen check` too.
TEST_F(CheckCli, ThePeerConstructsTheCpuBackendRunsAreValidMetal) {
  const std::string kernels = std::string(MFAGEN_SOURCE_DIR) + "/tests/cpu/kernels/";
  test::ProcessResult r = mfagen({"check", kernels + "peer_constructs.metal", kernels + "peer_constructs_fence.metal",
                                  kernels + "peer_constructs_function_constants.metal"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CheckCli, GeneratedKernelsPassWithTheirManifest) {
  fs::path out = dir_ / "out";
  test::ProcessResult g = mfagen({"generate", std::string(MFAGEN_SOURCE_DIR) + "/specs/llama.json", "-o",
                                  out.string(), "--no-check"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  std::vector<std::string> args = {"check", "--manifest", (out / "manifest.json").string(), "--signatures"};
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().extension() == ".metal") args.push_back(entry.path().string());
  test::ProcessResult r = mfagen(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("signatures match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[[buffer(5)]] constant AttentionParams& params"), std::string::npos) << r.out;
}

TEST_F(CheckCli, ManifestMismatchExitsOne) {
  fs::path out = dir_ / "out";
  ASSERT_EQ(mfagen({"generate", std::string(MFAGEN_SOURCE_DIR) + "/specs/qwen.json", "-o", out.string(),
                    "--no-check"})
                .exit_code,
            0);
  std::ifstream in(out / "manifest.json");
  std::string manifest((std::istreambuf_iterator<char>(in)), {});
  size_t at = manifest.find("\"index\": 4");
  ASSERT_NE(at, std::string::npos);
  manifest.replace(at, 10, "\"index\": 7");
  fs::path tampered = write("tampered.json", manifest);
  std::vector<std::string> args = {"check", "--manifest", tampered.string()};
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().extension() == ".metal") args.push_back(entry.path().string());
  test::ProcessResult r = mfagen(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the manifest lists buffer 7 'lse' (device float*) but no kernel of"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace mfagen::check
