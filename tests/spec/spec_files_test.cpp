// Loading spec files: several files in order, names unique across them, and
// an unreadable file reported as such.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "spec/spec_parser.h"

namespace mfagen::spec {
namespace {

namespace fs = std::filesystem;

class SpecFiles : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mfagen_spec_test_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  fs::path dir_;
};

TEST_F(SpecFiles, ConcatenatesFilesInOrder) {
  fs::path a = write("a.json", R"({"dtype": "float16", "head_dim": [64, 128]})");
  fs::path b = write("b.json", R"({"kernels": [{"dtype": "float32", "head_dim": 32}]})");
  auto specs = load_spec_files({a, b});
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].name, "attn_fwd_f16_d64_gqa");
  EXPECT_EQ(specs[1].name, "attn_fwd_f16_d128_gqa");
  EXPECT_EQ(specs[2].name, "attn_fwd_f32_d32_gqa");
  EXPECT_EQ(specs[0].origin.file, a.string());
  EXPECT_EQ(specs[2].origin.file, b.string());
  EXPECT_EQ(specs[2].origin.json_path, "kernels[0]");
}

TEST_F(SpecFiles, DuplicateNameAcrossFilesNamesBothPlaces) {
  fs::path a = write("a.json", R"({"kernels": [{"dtype": "float16", "head_dim": 64, "name": "attn"}]})");
  fs::path b = write("b.json", R"({"kernels": [{"dtype": "float16", "head_dim": 96},
                                               {"dtype": "float32", "head_dim": 64, "name": "attn"}]})");
  try {
    load_spec_files({a, b});
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), b.string());
    EXPECT_EQ(e.json_path(), "kernels[1]");
    EXPECT_EQ(std::string(e.what()),
              b.string() + ": kernels[1]: duplicate kernel name \"attn\": already used by a "
                           "different kernel at " + a.string() + ": kernels[0]");
  }
}

TEST_F(SpecFiles, SameKernelInTwoFilesIsKeptOnce) {
  // Spec sets of two models overlap: the kernel is generated once.
  fs::path a = write("a.json", R"({"dtype": "float16", "head_dim": 64})");
  fs::path b = write("b.json", R"({"kernels": [{"dtype": "float16", "head_dim": 64, "gqa": true},
                                               {"dtype": "float16", "head_dim": 80}]})");
  auto specs = load_spec_files({a, b});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].origin.file, a.string());
  EXPECT_EQ(specs[1].name, "attn_fwd_f16_d80_gqa");
  // The same file twice is no excuse for a repeat inside one file.
  fs::path c = write("c.json", R"({"kernels": [{"dtype": "float16", "head_dim": 64},
                                               {"dtype": "float16", "head_dim": 64}]})");
  try {
    load_spec_files({c});
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()), c.string() + ": kernels[1]: duplicate kernel \"attn_fwd_f16_d64_gqa\": the "
                                                  "same kernel is already specified at " + c.string() + ": kernels[0]");
  }
}

TEST_F(SpecFiles, UnreadableFile) {
  fs::path missing = dir_ / "missing.json";
  try {
    load_spec_file(missing);
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()), missing.string() + ": cannot read the file: No such file or directory");
  }
  try {
    load_spec_files({dir_});  // a directory opens but cannot be read
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()), dir_.string() + ": cannot read the file: Is a directory");
  }
}

TEST_F(SpecFiles, ErrorsNameTheFile) {
  fs::path a = write("a.json", R"({"dtype": "float16", "head_dim": 64})");
  fs::path bad = write("bad.json", R"({"kernels": [{"dtype": "float16", "head_dim": 600}]})");
  try {
    load_spec_files({a, bad});
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              bad.string() + ": kernels[0].head_dim: expected an integer in 1..576, found 600");
  }
}

}  // namespace
}  // namespace mfagen::spec
