#include "atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <system_error>

namespace mfagen::io {
namespace {

[[noreturn]] void throw_errno(std::string_view what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(), fmt::format("{} {}", what, path.string()));
}

// Unique within the process (counter) and across processes (pid, clock), so
// concurrent writers of the same target never share a temporary file.
std::filesystem::path temp_path_for(const std::filesystem::path& target) {
  static std::atomic<uint64_t> counter{0};
  uint64_t stamp = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string name = fmt::format(".{}.tmp.{}.{}.{:x}", target.filename().string(), ::getpid(), counter++,
                                 stamp & 0xffffff);
  return target.parent_path() / name;
}

// A rename is durable only once the directory entry is on disk too.
void sync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the data itself is already synced
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target) : target_(std::move(target)) {
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_ = temp_path_for(target_);
    // 0666 & ~umask, like any newly created file (mkstemp would give 0600).
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) throw_errno("cannot create a temporary file for", target_);
  }
  if (fd_ < 0) throw_errno("cannot create a temporary file for", target_);
}

AtomicFileWriter::~AtomicFileWriter() { discard(); }

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_.c_str());
  }
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw std::logic_error("AtomicFileWriter::write after commit");
  const std::byte* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", target_);
    }
    p += n;
    left -= size_t(n);
  }
}

void AtomicFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw std::logic_error("AtomicFileWriter::commit twice");
  if (::fsync(fd_) != 0) throw_errno("cannot sync", target_);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(temp_.c_str());
    throw_errno("cannot close", target_);
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp_.c_str());
    errno = saved;
    throw_errno("cannot rename a temporary file to", target_);
  }
  sync_directory(target_.parent_path());
}

void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes);
  writer.commit();
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  AtomicFileWriter writer(path);
  writer.write(text);
  writer.commit();
}

}  // namespace mfagen::io
