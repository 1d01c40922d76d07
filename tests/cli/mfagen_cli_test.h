// The fixture of the tests that drive the built `mfagen` binary the way a
// user does: a scratch directory of the test's own (kept when the test
// fails, for a look at what it left) and mfagen(args) to run the binary
// there. The test target defines MFAGEN_EXE.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_process.h"

namespace mfagen::test {

class MfagenCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / (std::string("mfagen_") + info->test_suite_name() + "_" +
                                                     info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // `mfagen ARGS...`, run in dir_.
  ProcessResult mfagen(std::vector<std::string> args) {
    args.insert(args.begin(), MFAGEN_EXE);
    return run_process(args, dir_);
  }

  static std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::filesystem::path dir_;
};

}  // namespace mfagen::test
