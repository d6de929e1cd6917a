#pragma once
// A checkpoint directory (--checkpoint-dir, --resume; docs/checkpoints.md): files named
// checkpoint-<epochs or steps done, 8 digits>.h5, each a GCN model file (docs/gcn-model.md) or
// a GPT checkpoint (docs/gpt.md), so the newest is the one with the most done. Each carries the
// identity of the run that wrote it (root attribute run_id: 32 hex digits), so that a run
// removes only its own checkpoints and refuses a directory that holds another run's.
//
// Private to the engine and the `plexus` tool. Every file system call takes an error code: an
// entry named like a checkpoint that is not one (a symbolic link loop, a directory) is
// described, never an exception of the file system library.
#include <optional>
#include <string>
#include <vector>

namespace plexus {

std::string checkpoint_path(const std::string& dir, long long done);
// The epochs or steps done of a checkpoint's file name (checkpoint-<8 to 10 digits>.h5), -1
// for any other name.
long long checkpoint_number(const std::string& file_name);
// The lock file of a checkpoint directory (io/files/run_lock.hpp): DIR/.plexus-lock.
std::string checkpoint_lock_path(const std::string& dir);

// A fresh run identity: 128 random bits as 32 lowercase hex digits.
std::string new_run_id();
bool is_run_id(const std::string& text);
// The run identity a checkpoint file carries: "" when it carries none (written before run
// identities, or a file of another kind). InputError(path, ...) when it cannot be read as HDF5,
// or its run_id is not a run identity.
std::string read_run_id_h5(const std::string& path);

// An entry of a directory whose name is a checkpoint's.
struct CheckpointEntry {
  long long done = 0;
  std::string path;
  // "" for a regular file; else what it is instead: "a symbolic link", "a symbolic link loop",
  // "a dangling symbolic link", "a directory", "a FIFO", ... (`readable` says whether a reader
  // following links would find a regular file: a link to one).
  std::string odd;
  bool readable = false;
};
// The entries of `dir` named like checkpoints, oldest first. InputError(dir, ...) when `dir` is
// missing, not a directory or cannot be listed.
std::vector<CheckpointEntry> list_checkpoints(const std::string& dir);

// Creates `dir` (and its parents) when missing; InputError(dir, ...) when it cannot be.
void make_checkpoint_dir(const std::string& dir);
// The newest checkpoint in `dir` (a regular file, or a link to one), or "" when it holds none;
// InputError(dir, ...) when `dir` is missing or not a directory, and InputError(entry, ...)
// when an entry named like a checkpoint cannot be read as a file (a link loop, a directory).
std::string newest_checkpoint(const std::string& dir);

// The first entry of `dir` named like a checkpoint that is not a checkpoint of run `run_id`,
// and why: "a checkpoint of another run", "a checkpoint written without a run identity" (none
// when `accept_unidentified`), "cannot be read: ..." or "is <odd>". nullopt: every one is the
// run's. `more`: how many others there are besides the one returned.
struct ForeignCheckpoint {
  std::string path, why;
  bool another_run = false;  // a readable checkpoint of another run (--resume would continue it)
  int more = 0;
};
std::optional<ForeignCheckpoint> find_foreign_checkpoint(const std::string& dir, const std::string& run_id,
                                                         bool accept_unidentified);

// Removes all but the `keep` newest checkpoints of run `run_id` in `dir` (keep 0: none removed):
// only regular files named like checkpoints whose run_id is `run_id`. Everything else stays —
// other runs' checkpoints, files that are not checkpoints, links, directories. Returns the
// files removed. Never throws for an entry; InputError(dir, ...) when `dir` cannot be listed.
std::vector<std::string> remove_old_checkpoints(const std::string& dir, int keep, const std::string& run_id);

// The temporaries of checkpoints that a killed run left in `dir` (a SIGKILL during a write: no
// handler runs), removed by the next run that holds the directory's lock — no other run can be
// writing them then. Only regular files named exactly as the writer names them,
// checkpoint-<n>.h5.tmp.<pid> (io/files/safe_files.hpp, AtomicFile), and not this process's.
// Returns the files removed; never throws for an entry.
std::vector<std::string> remove_checkpoint_temporaries(const std::string& dir);

// Whether `a` and `b` name one directory (device and inode; by name where one is missing).
bool same_directory(const std::string& a, const std::string& b);

// Whether writing `output` (symbolic links followed, by any path) would write a file that
// checkpoint directory `dir` owns: a name checkpoint-<n>.h5 or the lock file in that directory.
bool names_checkpoint_file(const std::string& output, const std::string& dir);

}  // namespace plexus
