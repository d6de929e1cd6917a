#pragma once
// An advisory lock on what a run writes (a checkpoint directory, a metrics file), held for the
// run's life, so that two runs given the same output do not interleave silently
// (docs/hardening.md, "Outputs another run is writing").
//
// The lock is an open-file-description lock (fcntl F_OFD_SETLK) on a small lock file whose
// text says who holds it ("pid <pid> on <host>"). The kernel drops it when the holder's
// process ends, however it ends, so a lock is never stale. The holder removes the lock file
// when it lets go, and so does a SIGINT, SIGTERM or SIGHUP that ends the process
// (io/files/safe_files.hpp, remove_on_signal); a process killed otherwise (SIGKILL, MPI_Abort
// of its job) leaves the file behind, which then locks nothing (the next run takes it over). A run that finds the lock file removed or
// replaced between opening and locking it tries again, so two runs never both hold one.
// OFD locks conflict between any two open descriptions, within one process too.
#include <string>

namespace plexus::io {

class RunLock {
 public:
  // Takes the lock file `lock_path` (created when missing). When another process holds it:
  // InputError(what, "in use by another plexus run (pid P on HOST); " + advice). When the file
  // system cannot lock (ENOLCK, EOPNOTSUPP, ...): one warning line on stderr per process,
  // and the run goes on without the lock (locked() is false). Other failures (no permission to
  // create the file): InputError(what, ...).
  RunLock(const std::string& lock_path, const std::string& what, const std::string& advice);
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();  // removes the lock file, then lets go of the lock
  bool locked() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  int slot_ = -1;  // in the signal handler's list of files to remove
};

// The text a lock file holds for this process: "pid <pid> on <host>".
std::string lock_holder_text();

}  // namespace plexus::io
