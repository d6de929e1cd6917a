#pragma once
// The fuzz input as a file: readers take paths. By default the bytes go to a memfd read back
// through /proc/self/fd/N (no disk traffic, nothing left behind); libhdf5 cannot open such a
// path (it fails H5Fopen), so the HDF5 target uses a regular temporary file instead
// (MemFile(data, size, /*regular=*/true, suffix): one per process under $TMPDIR, rewritten
// each run).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "plexus/error.hpp"

namespace plexus::fuzz {

class MemFile {
 public:
  MemFile(const std::uint8_t* data, std::size_t size, bool regular = false, const char* suffix = ".h5") {
    if (regular) {
      const char* tmp = std::getenv("TMPDIR");
      path_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/plexus-fuzz-" + std::to_string(::getpid()) + suffix;
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    } else {
      fd_ = memfd_create("plexus-fuzz", 0);
    }
    if (fd_ < 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
    if (!regular) path_ = "/proc/self/fd/" + std::to_string(fd_);
    regular_ = regular;
  }
  ~MemFile() {
    ::close(fd_);
    if (regular_) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  bool regular_ = false;
  std::string path_;
};

// Runs a reader on fuzz input: an InputError with a one-line message is the expected outcome
// of bad input; any other exception (or a multi-line message) aborts, so the fuzzer reports it.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const plexus::InputError& e) {
    if (std::getenv("PLEXUS_FUZZ_VERBOSE") != nullptr) std::fprintf(stderr, "InputError: %s\n", e.message().c_str());
    if (e.message().find('\n') != std::string::npos) {
      std::fprintf(stderr, "multi-line error message: %s\n", e.message().c_str());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
}

}  // namespace plexus::fuzz
