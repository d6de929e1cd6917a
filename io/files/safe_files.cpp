// Files kept safe: the checks of inputs and outputs, the temporary file and its removal on
// signals (io/files/safe_files.hpp).
#include "io/files/safe_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include "io/hdf5/file_set.hpp"
#include "plexus/error.hpp"

namespace plexus::io {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string parent_dir(const std::string& p) {
  const auto slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string base_name(const std::string& p) {
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// `path` with its symbolic links followed to the file they name (which need not exist). A link
// inside /proc (/dev/stdout -> /proc/self/fd/1 -> a pipe, a terminal or the shell's redirection)
// is a "magic" link with no path behind it: resolution stops there and `proc` is set.
std::string follow_links(const std::string& path, bool& proc) {
  std::string p = path;
  proc = false;
  for (int hops = 0; hops < 40; ++hops) {
    if (p.rfind("/proc/", 0) == 0) {
      proc = true;
      return p;
    }
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::string buf(PATH_MAX, '\0');
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n < 0) throw InputError(path, "cannot read the symbolic link " + p + ": " + errno_text(errno));
    buf.resize(static_cast<std::size_t>(n));
    p = buf.front() == '/' ? buf : parent_dir(p) + "/" + buf;
  }
  throw InputError(path, "too many levels of symbolic links");
}

struct FileId {
  dev_t dev;
  ino_t ino;
};

std::atomic<bool> guarding_inputs{false};
std::mutex inputs_mutex;
std::vector<FileId> noted_inputs;

bool is_noted_input(const struct stat& st) {
  std::lock_guard<std::mutex> lock(inputs_mutex);
  for (const FileId& f : noted_inputs)
    if (f.dev == st.st_dev && f.ino == st.st_ino) return true;
  return false;
}

// ---- temporary files removed on SIGINT, SIGTERM, SIGHUP ---------------------------------------
// The handler may only call async-signal-safe functions: the paths live in fixed slots, marked
// used after their bytes are written.
constexpr int kSlots = 64;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
char slot_path[kSlots][PATH_MAX];
volatile std::sig_atomic_t slot_used[kSlots];
struct sigaction previous_action[3];
bool handled[3];
std::mutex slots_mutex;

volatile std::sig_atomic_t graceful_stop = 0;  // enable_graceful_stop() was called
volatile std::sig_atomic_t stop_requested = 0;  // the signal that asked for it

extern "C" void remove_temporaries_and_reraise(int sig) {
  if (graceful_stop && stop_requested == 0 && (sig == SIGINT || sig == SIGTERM)) {
    stop_requested = sig;
    return;
  }
  for (int i = 0; i < kSlots; ++i)
    if (slot_used[i]) ::unlink(slot_path[i]);
  for (int k = 0; k < 3; ++k)
    if (kSignals[k] == sig && handled[k]) ::sigaction(sig, &previous_action[k], nullptr);
  ::raise(sig);  // pending until this handler returns; then the previous action runs
}

void install_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int k = 0; k < 3; ++k) {
      struct sigaction old {};
      if (::sigaction(kSignals[k], nullptr, &old) != 0) continue;
      if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;  // nohup: stays ignored
      struct sigaction act {};
      act.sa_handler = remove_temporaries_and_reraise;
      sigemptyset(&act.sa_mask);
      previous_action[k] = old;
      handled[k] = true;
      ::sigaction(kSignals[k], &act, nullptr);
    }
  });
}

}  // namespace

void enable_graceful_stop() {
  install_handlers_once();
  graceful_stop = 1;
}

int stop_signal() { return stop_requested; }

namespace {

int take_slot(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  install_handlers_once();
  std::lock_guard<std::mutex> lock(slots_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (slot_used[i]) continue;
    std::memcpy(slot_path[i], path.c_str(), path.size() + 1);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    slot_used[i] = 1;
    return i;
  }
  return -1;  // more than kSlots at once: still removed by the destructor, not by a signal
}

void release_slot(int i) {
  if (i < 0) return;
  std::lock_guard<std::mutex> lock(slots_mutex);
  slot_used[i] = 0;
}

void fsync_file(const std::string& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void write_all(int fd, const std::string& text, const std::string& path) {
  // A reader that went away must give an error, not a silent death by SIGPIPE.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &old);
  std::size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  ::sigaction(SIGPIPE, &old, nullptr);
  if (err) throw InputError(path, "write failed: " + errno_text(err));
}

std::shared_ptr<int> open_stream(const std::string& path, const std::string& opened) {
  // Non-blocking open: a FIFO without a reader fails (ENXIO) instead of waiting forever. Append:
  // /dev/stdout redirected to a file must not write over what is already there.
  const int fd = ::open(opened.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENXIO) throw InputError(path, "cannot write: is a FIFO with no reader");
    throw InputError(path, "cannot write: cannot open: " + errno_text(err));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // opened: now writes may wait for the reader
  return std::shared_ptr<int>(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
}

}  // namespace

int remove_on_signal(const std::string& path) { return take_slot(path); }
void forget_on_signal(int slot) { release_slot(slot); }

void require_regular_input(const std::string& path, const char* format) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return;
  const char* kind = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket" : "not a file";
  throw InputError(path, std::string("is ") + kind + ", not a regular file (" + format + " needs one)");
}

std::string read_whole_input(const std::string& path, const char* format) {
  require_regular_input(path, format);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open file");
  note_input_file(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path, "read error");
  return std::move(ss).str();
}

void guard_inputs() { guarding_inputs.store(true); }

bool inputs_guarded() { return guarding_inputs.load(); }

void note_input_file(const std::string& path) {
  if (!guarding_inputs.load()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  std::lock_guard<std::mutex> lock(inputs_mutex);
  noted_inputs.push_back({st.st_dev, st.st_ino});
}

int same_file_as_standard_stream(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  for (const int fd : {1, 2}) {
    struct stat s {};
    if (::fstat(fd, &s) == 0 && s.st_dev == st.st_dev && s.st_ino == st.st_ino) return fd;
  }
  return 0;
}

void check_not_same_file(const std::string& output, const std::string& input, const std::string& reader,
                         const std::string& how) {
  if (input.empty()) return;
  struct stat out {}, in {};
  if (::stat(output.c_str(), &out) != 0 || ::stat(input.c_str(), &in) != 0) return;
  if (!S_ISREG(out.st_mode) || !S_ISREG(in.st_mode)) return;
  if (out.st_dev != in.st_dev || out.st_ino != in.st_ino) return;
  if (reader.empty())
    throw InputError(output, "cannot write: is the same file as the input " + input + " (writing it would destroy the input)");
  throw InputError(output, "cannot write: the input " + reader + " reads this file through HDF5 (" + how +
                               "); writing it would destroy the input");
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, fs::path>> seen;  // option, resolved target
  for (const auto& [option, path] : outputs) {
    if (path.empty()) continue;
    bool proc = false;
    std::error_code ec;
    const fs::path target = fs::weakly_canonical(fs::absolute(follow_links(path, proc), ec), ec);
    struct stat st {};
    if (proc || (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode))) continue;  // a stream or device
    for (const auto& [other, seen_target] : seen)
      if (seen_target == target)
        throw InputError(path, "cannot write: " + other + " and " + option + " name the same file (one would replace the other)");
    seen.emplace_back(option, target);
  }
}

OutputTarget check_output(const std::string& path, OutputNeeds needs, const std::vector<std::string>& inputs) {
  if (path.empty()) throw InputError("output", "the file name is empty");
  OutputTarget out;
  out.path = path;
  bool proc = false;
  out.target = follow_links(path, proc);
  // The file behind standard output or error (--metrics /dev/stdout > run.log): opened again, it
  // would have an offset of its own (and a regular file would be emptied), so what plexus prints
  // and what it writes there would overwrite each other. Written through that descriptor.
  if (const int fd = same_file_as_standard_stream(path); fd != 0) {
    struct stat st {};
    const bool regular = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (needs == OutputNeeds::Stream) {
      const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      if (copy < 0) throw InputError(path, "cannot write: cannot duplicate standard " + std::string(fd == 1 ? "output" : "error") + ": " + errno_text(errno));
      out.stream_fd = std::shared_ptr<int>(new int(copy), [](int* f) {
        ::close(*f);
        delete f;
      });
      out.stream = true;
      out.shares_std_fd = fd;
      return out;
    }
    if (regular && !proc)  // (/dev/stdout itself: refused below as an open descriptor)
      throw InputError(path, std::string("cannot write: is the same file as standard ") + (fd == 1 ? "output" : "error") +
                                 ", where plexus prints its messages; name another file");
  }
  if (proc) {
    // /dev/stdout and friends: write through the descriptor the link stands for.
    if (needs == OutputNeeds::Seekable)
      throw InputError(path, "cannot write: names an open descriptor (" + out.target + "), not a regular file (HDF5 needs one)");
    out.stream_fd = open_stream(path, out.target);
    out.stream = true;
    return out;
  }
  struct stat st {};
  if (::lstat(out.target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(path, "cannot write: is a directory");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      if (needs == OutputNeeds::Seekable)
        throw InputError(path, std::string("cannot write: is a ") + (S_ISFIFO(st.st_mode) ? "FIFO" : "character device") +
                                   ", not a regular file (HDF5 needs one)");
      out.stream_fd = open_stream(path, out.target);
      out.stream = true;
      return out;
    }
    if (!S_ISREG(st.st_mode)) throw InputError(path, "cannot write: is not a regular file, character device or FIFO");
    if (::access(out.target.c_str(), W_OK) != 0) throw InputError(path, "cannot write: is not writable: " + errno_text(errno));
  }
  const std::string dir = parent_dir(out.target);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) throw InputError(path, "cannot write: directory " + dir + " does not exist: " + errno_text(errno));
  if (!S_ISDIR(dst.st_mode)) throw InputError(path, "cannot write: " + dir + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(path, "cannot write: directory " + dir + " is not writable: " + errno_text(errno));
  // The temporary file's name must fit as well as the output's.
  const std::string temp_name = base_name(out.target) + ".tmp." + std::to_string(::getpid());
  long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  if (static_cast<long>(temp_name.size()) > name_max)
    throw InputError(path, "cannot write: the file name is too long: " + std::to_string(temp_name.size()) +
                               " bytes with the temporary suffix, at most " + std::to_string(name_max));
  if (out.target.size() + temp_name.size() - base_name(out.target).size() >= PATH_MAX)
    throw InputError(path, "cannot write: the path is too long");
  for (const std::string& in : inputs) {
    check_not_same_file(path, in);
    for (const h5::ReachedFile& reached : h5::files_read_through(in)) check_not_same_file(path, reached.path, in, reached.how);
  }
  return out;
}

AtomicFile::AtomicFile(const OutputTarget& out)
    : path_(out.path), target_(out.target), temp_(out.target + ".tmp." + std::to_string(::getpid())) {
  if (out.stream) throw InputError(path_, "is not a regular file");
  slot_ = take_slot(temp_);
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    release_slot(slot_);
    slot_ = -1;
    throw InputError(path_, "cannot write: cannot create " + temp_ + ": " + errno_text(err));
  }
  ::close(fd);
}

AtomicFile::~AtomicFile() {
  if (!committed_) ::unlink(temp_.c_str());
  release_slot(slot_);
}

void AtomicFile::commit() {
  // Renaming over a file this process read would destroy it, whatever name it was read by.
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0 && is_noted_input(st))
    throw InputError(path_, "cannot write: is the same file as an input of this command (writing it would destroy the input)");
  fsync_file(temp_);
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    throw InputError(path_, "cannot write: renaming " + temp_ + " failed: " + errno_text(err));
  }
  committed_ = true;
  release_slot(slot_);
  slot_ = -1;
  fsync_file(parent_dir(target_));  // the rename itself survives a crash
}

void write_text_output(const OutputTarget& out, const std::string& text) {
  if (out.stream) return write_all(*out.stream_fd, text, out.path);
  AtomicFile file(out);
  const int fd = ::open(file.temp_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw InputError(out.path, "cannot open " + file.temp_path() + ": " + errno_text(errno));
  try {
    write_all(fd, text, out.path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw InputError(out.path, "write failed: " + errno_text(errno));
  file.commit();
}

LineLog::LineLog(const OutputTarget& out) : path_(out.path), target_(out.target) {
  if (out.stream) {
    stream_fd_ = out.stream_fd;
    fd_ = *stream_fd_;
    shares_std_fd_ = out.shares_std_fd;
    return;
  }
  slot_ = take_slot(target_);
  fd_ = ::open(target_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    release_slot(slot_);
    throw InputError(out.path, "cannot write: cannot open: " + errno_text(err));
  }
}

LineLog::~LineLog() {
  if (stream_fd_) return;
  ::close(fd_);
  if (!committed_) ::unlink(target_.c_str());
  release_slot(slot_);
}

void LineLog::commit() {
  committed_ = true;
  release_slot(slot_);
  slot_ = -1;
}

void LineLog::append(const std::string& line) {
  if (shares_std_fd_ != 0) std::fflush(shares_std_fd_ == 1 ? stdout : stderr);  // what was printed comes first
  write_all(fd_, line + "\n", path_);
}

}  // namespace plexus::io
