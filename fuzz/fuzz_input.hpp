#pragma once
// The fuzz input as a file: readers take paths, so each input is written to a memfd and read
// back through /proc/self/fd/N (no disk traffic, nothing left behind).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace plexus::fuzz {

class MemFile {
 public:
  MemFile(const std::uint8_t* data, std::size_t size) {
    fd_ = memfd_create("plexus-fuzz", 0);
    if (fd_ < 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace plexus::fuzz
