#pragma once
// Checkpoint options and the graceful stop, shared by `plexus train` and `plexus gpt train`
// (docs/checkpoints.md): --checkpoint-dir, --checkpoint-every, --keep, --resume; SIGINT and
// SIGTERM end a run after its epoch or step, exit status 128 + signal.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "plexus/process_grid.hpp"

namespace plexus::cli {

struct CheckpointOptions {
  std::string dir, resume;
  int every = 10, keep = 2;
};
// `unit`: what a run counts ("epochs", "steps").
void add_checkpoint_options(CLI::App* cmd, CheckpointOptions& o, const char* unit);

// Before any work: checks the options, creates --checkpoint-dir and checks it as an output (rank
// 0; `inputs`: files the run reads), and returns the checkpoint --resume names (the newest in
// its directory, the same on every rank), or "" without --resume. InputError for each problem.
std::string prepare_checkpoints(const CheckpointOptions& o, ProcessGrid& grid, const std::vector<std::string>& inputs);

// Writes checkpoint files of a run: after every o.every-th epoch or step, at the end, and when
// stopping; removes all but the o.keep newest.
class CheckpointSchedule {
 public:
  CheckpointSchedule(const CheckpointOptions& o, bool root) : o_(o), root_(root) {}
  // The file to write after `done` of `total` (empty: none now).
  std::string due(long long done, long long total, bool stopping) const;
  // After the file `path` was written (collectively): rotation, by rank 0.
  void written(const std::string& path);
  const std::string& last() const { return last_; }

 private:
  CheckpointOptions o_;
  bool root_;
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
