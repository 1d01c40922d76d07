// The preprocessed-source cache (preprocessed_cache.h): a second compile of a
// source skips clang -E, and a change to any file it includes, or to the
// source, is seen at the next compile.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

namespace fs = std::filesystem;

const std::string kScaleKernel =
    "#include <metal_stdlib>\n"
    "#include \"scale.h\"\n"
    "using namespace metal;\n"
    "kernel void scale(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] *= kScale; }\n";

class PreprocessedCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mfagen_preprocessed_cache_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cache");
    options_.cache_dir = dir_ / "cache";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_header(const std::string& scale) {
    std::ofstream(dir_ / "scale.h") << "constant float kScale = " << scale << ";\n";
  }

  // The kernel's output on {1, 2, 3, 4}, and the compile's statistics.
  std::vector<float> compile_and_run(const std::string& source, cpu::CompileStats& stats) {
    auto module = cpu::compile(source, (dir_ / "scale.metal").string(), options_, &stats);
    std::vector<float> values = {1, 2, 3, 4};
    cpu::LaunchResult result = run(*module, "scale", {1, 1, 1}, {4, 1, 1}, {bind(0, values)});
    EXPECT_EQ(result.findings_total, 0u) << describe(result);
    return values;
  }

  fs::path dir_;
  cpu::CompileOptions options_;
};

TEST_F(PreprocessedCache, ASecondCompileSkipsThePreprocessor) {
  write_header("2.0f");
  cpu::CompileStats first, second;
  EXPECT_EQ(compile_and_run(kScaleKernel, first), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_FALSE(first.preprocess_hit);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_EQ(compile_and_run(kScaleKernel, second), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_TRUE(second.preprocess_hit);
  EXPECT_TRUE(second.cache_hit);
}

TEST_F(PreprocessedCache, AChangedIncludeIsPreprocessedAgain) {
  write_header("2.0f");
  cpu::CompileStats first, changed, again;
  compile_and_run(kScaleKernel, first);
  write_header("3.0f");
  EXPECT_EQ(compile_and_run(kScaleKernel, changed), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_FALSE(changed.preprocess_hit) << "scale.h changed: its cached text is stale";
  EXPECT_FALSE(changed.cache_hit);
  EXPECT_EQ(compile_and_run(kScaleKernel, again), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_TRUE(again.preprocess_hit);
}

TEST_F(PreprocessedCache, ADeletedIncludeIsAnErrorNotAStaleHit) {
  write_header("2.0f");
  cpu::CompileStats first, missing;
  compile_and_run(kScaleKernel, first);
  fs::remove(dir_ / "scale.h");
  EXPECT_THROW(cpu::compile(kScaleKernel, (dir_ / "scale.metal").string(), options_, &missing), cpu::CompileError);
}

TEST_F(PreprocessedCache, AChangedSourceOrDefineIsADifferentEntry) {
  write_header("2.0f");
  cpu::CompileStats first, edited, defined;
  compile_and_run(kScaleKernel, first);
  std::string edited_source = kScaleKernel;
  edited_source.replace(edited_source.find("a[i] *= kScale"), 14, "a[i] += kScale");
  EXPECT_EQ(compile_and_run(edited_source, edited), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_FALSE(edited.preprocess_hit);
  options_.defines = {"UNUSED_MACRO=1"};
  compile_and_run(kScaleKernel, defined);
  EXPECT_FALSE(defined.preprocess_hit) << "the defines are part of the preprocessor's input";
}

TEST_F(PreprocessedCache, ACorruptEntryIsIgnored) {
  write_header("2.0f");
  cpu::CompileStats first, after;
  compile_and_run(kScaleKernel, first);
  for (const auto& entry : fs::directory_iterator(dir_ / "cache"))
    if (entry.path().extension() == ".ii") std::ofstream(entry.path(), std::ios::trunc) << "mfagen-preprocessed 1\nx\n";
  EXPECT_EQ(compile_and_run(kScaleKernel, after), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_FALSE(after.preprocess_hit);
}

}  // namespace
}  // namespace mfagen::cputest
