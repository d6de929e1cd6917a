// Advisory locks on a run's outputs (io/files/run_lock.hpp).
#include "io/files/run_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"

namespace plexus::io {

namespace {

std::atomic<bool> warned_no_locks{false};

struct flock whole_file(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;  // to the end of the file, however long
  fl.l_pid = 0;  // must be 0 for OFD locks
  return fl;
}

// What a lock file says of its holder, on one line; "" when it says nothing readable.
std::string read_holder(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return s;
}

bool locks_unsupported(int err) { return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL; }

}  // namespace

std::string lock_holder_text() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "an unknown host");
  return "pid " + std::to_string(::getpid()) + " on " + host;
}

RunLock::RunLock(const std::string& lock_path, const std::string& what, const std::string& advice) : path_(lock_path) {
  // A few rounds at most: each retry means the holder let go (and removed the file) meanwhile.
  for (int round = 0; round < 100; ++round) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0666);
    if (fd < 0) {
      const int err = errno;
      throw InputError(what, "cannot create the lock file " + path_ + ": " + std::strerror(err));
    }
    struct stat opened {};
    if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
      ::close(fd);
      throw InputError(what, "the lock file " + path_ + " is not a regular file; remove it");
    }
    struct flock fl = whole_file(F_WRLCK);
    if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
      const int err = errno;
      if (err == EAGAIN || err == EACCES) {
        std::string holder = read_holder(fd);
        ::close(fd);
        if (holder.empty()) holder = "a process that has not yet said who it is";
        throw InputError(what, "in use by another plexus run (" + holder + "); " + advice);
      }
      ::close(fd);
      if (!locks_unsupported(err)) throw InputError(what, "cannot lock " + path_ + ": " + std::strerror(err));
      if (!warned_no_locks.exchange(true))
        std::fprintf(stderr,
                     "plexus: warning: %s: the file system cannot lock %s (%s); going on without a lock "
                     "(two runs writing here at once would not be stopped)\n",
                     what.c_str(), path_.c_str(), std::strerror(err));
      return;  // without a lock; the file stays as it was
    }
    // The file locked must still be the one the name leads to: a holder removes its lock file
    // before letting go, and a run that opened it just before would lock a file nobody sees.
    struct stat named {};
    if (::stat(path_.c_str(), &named) != 0 || named.st_dev != opened.st_dev || named.st_ino != opened.st_ino) {
      ::close(fd);
      continue;
    }
    const std::string text = lock_holder_text() + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      // The lock holds without the text; a second run would name no holder. Not worth failing for.
    }
    fd_ = fd;
    slot_ = remove_on_signal(path_);
    return;
  }
  throw InputError(what, "cannot lock " + path_ + ": it keeps being replaced; " + advice);
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still holding the lock: see the constructor's retry
  forget_on_signal(slot_);
  ::close(fd_);             // lets go
}

}  // namespace plexus::io
