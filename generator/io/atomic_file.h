// Atomic file output: every file mfagen writes (kernels, manifests, depfiles,
// .npy results) appears complete or not at all, even if the process dies or
// a build system reads it concurrently. Bytes go to a temporary file in the
// target's directory (so rename stays on one filesystem), are fsync'ed, and
// the file is renamed over the target.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace mfagen::io {

// Streams a file's content; commit() publishes it. Destroying an uncommitted
// writer removes the temporary file and leaves the target untouched.
// All failures throw std::system_error naming the path.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path target);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  void commit();

 private:
  void discard() noexcept;

  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
};

void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

}  // namespace mfagen::io
