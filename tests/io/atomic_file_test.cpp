// Atomic output: the target is replaced whole on commit and untouched otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "io/atomic_file.h"

namespace mfagen::io {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mfagen_atomic_file_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  size_t entries() const { return size_t(std::distance(fs::directory_iterator(dir_), {})); }
  fs::path dir_;
};

TEST_F(AtomicFile, CommitReplacesTheTarget) {
  write_file_atomic(dir_ / "a.txt", "old");
  AtomicFileWriter writer(dir_ / "a.txt");
  writer.write("new ");
  writer.write(std::as_bytes(std::span<const char>("content", 7)));
  EXPECT_EQ(contents(dir_ / "a.txt"), "old");  // readers see the old file until commit
  writer.commit();
  EXPECT_EQ(contents(dir_ / "a.txt"), "new content");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, AbandonedWriterLeavesNothing) {
  write_file_atomic(dir_ / "a.txt", "kept");
  {
    AtomicFileWriter writer(dir_ / "a.txt");
    writer.write("partial");
  }
  {
    AtomicFileWriter writer(dir_ / "b.txt");
  }
  EXPECT_EQ(contents(dir_ / "a.txt"), "kept");
  EXPECT_FALSE(fs::exists(dir_ / "b.txt"));
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, NewFilesGetUsualPermissions) {
  mode_t old = ::umask(022);
  write_file_atomic(dir_ / "p.txt", "x");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "p.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(AtomicFile, ErrorsNameThePath) {
  try {
    write_file_atomic(dir_ / "no_such_dir" / "a.txt", "x");
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dir/a.txt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mfagen::io
