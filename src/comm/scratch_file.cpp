// Scratch files that vanish with the process (comm/scratch_file.hpp).
#include "comm/scratch_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "plexus/error.hpp"

namespace plexus::comm {

namespace {
std::string errno_text(int err) { return std::strerror(err); }
}  // namespace

ScratchFile::ScratchFile(const std::string& dir) : dir_(dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw InputError(dir, "scratch directory: " + errno_text(errno));
  if (!S_ISDIR(st.st_mode)) throw InputError(dir, "scratch directory: not a directory");
  std::string name = dir + (dir.empty() || dir.back() == '/' ? "" : "/") + "plexus-scratch-XXXXXX";
  std::vector<char> path(name.begin(), name.end());
  path.push_back('\0');
  fd_ = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd_ < 0) throw InputError(dir, "scratch directory: cannot create a file: " + errno_text(errno));
  // Nameless from here on: the system frees it however the process ends.
  if (::unlink(path.data()) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw InputError(dir, "scratch directory: cannot unlink a scratch file: " + errno_text(err));
  }
}

ScratchFile::ScratchFile(ScratchFile&& o) noexcept : dir_(std::move(o.dir_)), fd_(o.fd_), size_(o.size_) {
  o.fd_ = -1;
}

ScratchFile& ScratchFile::operator=(ScratchFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    dir_ = std::move(o.dir_);
    fd_ = o.fd_;
    size_ = o.size_;
    o.fd_ = -1;
  }
  return *this;
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t ScratchFile::append(const void* data, std::size_t bytes) {
  const std::uint64_t at = size_;
  const char* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pwrite(fd_, p + done, bytes - done, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      throw InputError(dir_, "cannot write a scratch file: " + errno_text(err));
    }
    done += static_cast<std::size_t>(n);
  }
  size_ += bytes;
  return at;
}

void ScratchFile::read(std::uint64_t offset, void* data, std::size_t bytes) const {
  char* p = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd_, p + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      throw InputError(dir_, "cannot read back a scratch file: " + errno_text(err));
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace plexus::comm
