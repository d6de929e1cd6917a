#pragma once
// Checkpoint options and the graceful stop, shared by `plexus train` and `plexus gpt train`
// (docs/checkpoints.md): --checkpoint-dir, --checkpoint-every, --keep, --resume; SIGINT and
// SIGTERM end a run after its epoch or step, exit status 128 + signal.
#include <CLI/CLI.hpp>

#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "io/files/run_lock.hpp"
#include "plexus/process_grid.hpp"

namespace plexus::cli {

struct CheckpointOptions {
  std::string dir, resume;
  int every = 10, keep = 2;
};
// `unit`: what a run counts ("epochs", "steps").
void add_checkpoint_options(CLI::App* cmd, CheckpointOptions& o, const char* unit);

// What a run knows of its checkpoints once they are prepared.
struct RunCheckpoints {
  std::string resume_from;  // the checkpoint --resume names; "" without --resume
  // The run's identity, stored in every checkpoint it writes (the same on every rank): the
  // resumed checkpoint's, else a fresh one (docs/checkpoints.md, "Whose checkpoints").
  std::string run_id;
  std::unique_ptr<io::RunLock> lock;  // rank 0's lock on --checkpoint-dir, for the run's life
};

// Before any work, on every rank: checks the options; finds the checkpoint --resume names (the
// newest in its directory, the same on every rank) and the run's identity; then rank 0
// creates --checkpoint-dir, locks it, refuses it when it holds anything named like a checkpoint
// that is not this run's, and checks it as an output (`inputs`: files the run reads).
// InputError for each problem.
RunCheckpoints prepare_checkpoints(const CheckpointOptions& o, ProcessGrid& grid, const std::vector<std::string>& inputs);

// Rank 0, before any output is opened: InputError(output, ...) when an output of the run
// (`outputs`: {option, path}) would write a file --checkpoint-dir owns (a checkpoint's name,
// by any path or link): the checkpoint and the output would replace each other.
void check_outputs_outside_checkpoints(const CheckpointOptions& o,
                                       const std::vector<std::pair<std::string, std::string>>& outputs);

// Writes checkpoint files of a run: after every o.every-th epoch or step, at the end, and when
// stopping; removes all but the o.keep newest.
class CheckpointSchedule {
 public:
  CheckpointSchedule(const CheckpointOptions& o, bool root) : o_(o), root_(root) {}
  // The run identity whose checkpoints rotation may remove (RunCheckpoints::run_id).
  void set_run_id(const std::string& id) { run_id_ = id; }
  // The file to write after `done` of `total` (empty: none now).
  std::string due(long long done, long long total, bool stopping) const;
  // After the file `path` was written (collectively): rotation, by rank 0, of this run's
  // checkpoints only.
  void written(const std::string& path);
  const std::string& last() const { return last_; }

 private:
  CheckpointOptions o_;
  bool root_;
  std::string run_id_;
  std::string last_;
};

// (io::enable_graceful_stop makes SIGINT and SIGTERM ask for a graceful stop.)
// The signal a graceful stop was asked for by on any rank (0: none), the same on every rank
// (one all-reduce).
int agreed_stop_signal(ProcessGrid& grid);
// Ends the command with 128 + signal and returns the line that says so, e.g. "interrupted by
// SIGTERM after epoch 7 of 20; checkpoint D/checkpoint-00000007.h5 (continue with --resume D)";
// `abandoned`: the stop came within the work after `done` (a stop point), which was dropped.
std::string interrupted(int signal, const char* unit, long long done, long long total, const CheckpointSchedule& s,
                        const std::string& dir, bool abandoned = false);

}  // namespace plexus::cli
