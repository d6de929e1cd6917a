// Checkpoint options and the graceful stop of long runs (src/cli/run_control.hpp).
#include "src/cli/run_control.hpp"

#include <csignal>
#include <functional>

#include "io/files/safe_files.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "src/cli/abort_job.hpp"
#include "src/cli/checkpoint_dir.hpp"

namespace plexus::cli {

void add_checkpoint_options(CLI::App* cmd, CheckpointOptions& o, const char* unit) {
  const std::string u = unit;
  cmd->add_option("--checkpoint-dir", o.dir,
                  "Write checkpoints (weights, optimizer state, options; docs/checkpoints.md) to DIR, created if "
                  "missing");
  cmd->add_option("--checkpoint-every", o.every, u.substr(0, 1) == "e" ? "Epochs between checkpoints (and one at the end)"
                                                                        : "Steps between checkpoints (and one at the end)")
      ->capture_default_str();
  cmd->add_option("--keep", o.keep, "Checkpoints kept in --checkpoint-dir, the newest (0 = all)")->capture_default_str();
  cmd->add_option("--resume", o.resume,
                  "Continue from the newest checkpoint in DIR (same options; any grid). SIGINT/SIGTERM end a run "
                  "after its " + u.substr(0, u.size() - 1) + " with a checkpoint, exit status 128+signal");
}

std::string prepare_checkpoints(const CheckpointOptions& o, ProcessGrid& grid, const std::vector<std::string>& inputs) {
  if (o.every < 1) throw InputError("--checkpoint-every", "must be >= 1, got " + std::to_string(o.every));
  if (o.keep < 0) throw InputError("--keep", "must be >= 0 (0 keeps every checkpoint), got " + std::to_string(o.keep));
  std::string resume;
  if (!o.resume.empty()) {
    resume = newest_checkpoint(o.resume);
    if (resume.empty())
      throw InputError(o.resume, "holds no checkpoint to resume from (checkpoint-<n>.h5, written by --checkpoint-dir)");
    // Every rank must resume the same file: a directory every rank sees alike, as the data.
    double hash = static_cast<double>(std::hash<std::string>{}(resume) % (1u << 30)), neg = -hash;
    grid.world().all_reduce(&hash, 1, ReduceOp::Max);
    grid.world().all_reduce(&neg, 1, ReduceOp::Max);
    if (hash != -neg)
      throw InputError(o.resume, "the ranks see different newest checkpoints (is it on a shared file system?)");
  }
  if (!o.dir.empty() && grid.rank() == 0) {
    make_checkpoint_dir(o.dir);
    io::check_output(checkpoint_path(o.dir, 0), io::OutputNeeds::Seekable, inputs);
  }
  return resume;
}

std::string CheckpointSchedule::due(long long done, long long total, bool stopping) const {
  if (o_.dir.empty() || done == 0) return "";
  if (done % o_.every == 0 || done == total || stopping) {
    const std::string path = checkpoint_path(o_.dir, done);
    return path == last_ ? "" : path;
  }
  return "";
}

void CheckpointSchedule::written(const std::string& path) {
  last_ = path;
  if (root_) remove_old_checkpoints(o_.dir, o_.keep);
}

int agreed_stop_signal(ProcessGrid& grid) {
  double sig = io::stop_signal();
  grid.world().all_reduce(&sig, 1, ReduceOp::Max);
  return static_cast<int>(sig);
}

std::string interrupted(int signal, const char* unit, long long done, long long total, const CheckpointSchedule& s,
                        const std::string& dir, bool abandoned) {
  set_exit_status(128 + signal);
  const std::string u = unit;
  return "interrupted by " + std::string(signal == SIGINT ? "SIGINT" : "SIGTERM") + " after " +
         u.substr(0, u.size() - 1) + " " + std::to_string(done) + " of " + std::to_string(total) +
         (abandoned ? " (work after it abandoned)" : "") +
         (s.last().empty() ? std::string(" (no --checkpoint-dir: nothing saved to resume from)")
                           : "; checkpoint " + s.last() + " (continue with --resume " + dir + ")");
}

}  // namespace plexus::cli
