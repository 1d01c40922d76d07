// Launch configurations Metal refuses are LaunchErrors, with a message that
// names the problem: an empty grid, too many threads per threadgroup, a
// buffer the kernel needs but was not given, an unknown entry point.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

using ::testing::HasSubstr;

class LaunchErrors : public ::testing::Test {
 protected:
  void SetUp() override { module_ = compile_kernel("copy.metal"); }

  // The LaunchError message of a launch of `entry`, or "" if it ran.
  std::string error_of(std::string_view entry, Dim3 groups, Dim3 threads, std::vector<cpu::BufferBinding> buffers,
                       std::map<uint32_t, uint64_t> threadgroup_bytes = {}) {
    try {
      run(*module_, entry, groups, threads, std::move(buffers), std::move(threadgroup_bytes));
    } catch (const cpu::LaunchError& e) {
      return e.what();
    }
    return "";
  }

  std::shared_ptr<const cpu::Module> module_;
  std::vector<float> src_ = std::vector<float>(64, 1.0f), dst_ = std::vector<float>(64, 0.0f);
  uint32_t n_ = 64;
};

TEST_F(LaunchErrors, ValidLaunchRuns) {
  EXPECT_EQ(error_of("copy", {2, 1, 1}, {32, 1, 1}, {bind(0, src_), bind(1, dst_), bind_scalar(2, n_)}), "");
  for (float v : dst_) EXPECT_EQ(v, 1.0f);
}

TEST_F(LaunchErrors, ZeroGrid) {
  for (Dim3 groups : {Dim3{0, 1, 1}, Dim3{4, 0, 1}, Dim3{1, 1, 0}})
    EXPECT_THAT(error_of("copy", groups, {32, 1, 1}, {bind(0, src_), bind(1, dst_), bind_scalar(2, n_)}),
                HasSubstr("zero"));
  EXPECT_THAT(error_of("copy", {1, 1, 1}, {0, 1, 1}, {bind(0, src_), bind(1, dst_), bind_scalar(2, n_)}),
              HasSubstr("zero"));
}

TEST_F(LaunchErrors, MoreThan1024ThreadsPerThreadgroup) {
  EXPECT_THAT(error_of("copy", {1, 1, 1}, {1025, 1, 1}, {bind(0, src_), bind(1, dst_), bind_scalar(2, n_)}),
              HasSubstr("1024"));
  EXPECT_THAT(error_of("copy", {1, 1, 1}, {32, 33, 1}, {bind(0, src_), bind(1, dst_), bind_scalar(2, n_)}),
              HasSubstr("1024"));
  EXPECT_EQ(error_of("copy", {1, 1, 1}, {32, 32, 1}, {bind(0, src_), bind(1, dst_), bind_scalar(2, n_)}), "");
}

TEST_F(LaunchErrors, MissingBuffer) {
  EXPECT_THAT(error_of("copy", {2, 1, 1}, {32, 1, 1}, {bind(0, src_), bind(1, dst_)}), HasSubstr("buffer(2)"));
  EXPECT_THAT(error_of("copy", {2, 1, 1}, {32, 1, 1}, {bind(1, dst_), bind_scalar(2, n_)}), HasSubstr("buffer(0)"));
}

TEST_F(LaunchErrors, BufferTheKernelDoesNotHave) {
  std::vector<float> extra(4);
  EXPECT_THAT(error_of("copy", {2, 1, 1}, {32, 1, 1}, {bind(0, src_), bind(1, dst_), bind_scalar(2, n_), bind(5, extra)}),
              HasSubstr("buffer(5)"));
}

TEST_F(LaunchErrors, UnknownEntryPoint) {
  std::string message = error_of("no_such_kernel", {1, 1, 1}, {32, 1, 1}, {});
  EXPECT_THAT(message, HasSubstr("no_such_kernel"));
  EXPECT_THAT(message, HasSubstr("copy4")) << "lists the kernels that exist";
}

TEST_F(LaunchErrors, ThreadgroupBufferWithoutSize) {
  EXPECT_THAT(error_of("scratch_user", {1, 1, 1}, {32, 1, 1}, {bind(0, dst_)}), HasSubstr("threadgroup(0)"));
  EXPECT_EQ(error_of("scratch_user", {1, 1, 1}, {32, 1, 1}, {bind(0, dst_)}, {{0, 32 * 4}}), "");
  for (int i = 0; i < 32; ++i) EXPECT_EQ(dst_[i], float(i));
}

}  // namespace
}  // namespace mfagen::cputest
