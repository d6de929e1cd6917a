// Checkpoint options and the graceful stop of long runs (src/cli/run_control.hpp).
#include "src/cli/run_control.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "io/files/safe_files.hpp"
#include "io/model_files/checkpoint_dir.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "src/cli/abort_job.hpp"

namespace plexus::cli {

namespace {

// Rank 0's run identity on every rank: its 128 bits as four 32-bit numbers, each exact in a
// double, through one all-reduce (the other ranks add zeros).
std::string agreed_run_id(ProcessGrid& grid, const std::string& id_on_root) {
  double parts[4] = {0, 0, 0, 0};
  if (grid.rank() == 0)
    for (int k = 0; k < 4; ++k) parts[k] = static_cast<double>(std::strtoul(id_on_root.substr(8 * k, 8).c_str(), nullptr, 16));
  grid.world().all_reduce(parts, 4, ReduceOp::Sum);
  std::string id;
  for (const double p : parts) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(p));
    id += hex;
  }
  return id;
}

}  // namespace

void add_checkpoint_options(CLI::App* cmd, CheckpointOptions& o, const char* unit) {
  const std::string u = unit;
  cmd->add_option("--checkpoint-dir", o.dir,
                  "Write checkpoints (weights, optimizer state, options; docs/checkpoints.md) to DIR, created if "
                  "missing");
  cmd->add_option("--checkpoint-every", o.every, u.substr(0, 1) == "e" ? "Epochs between checkpoints (and one at the end)"
                                                                        : "Steps between checkpoints (and one at the end)")
      ->capture_default_str();
  cmd->add_option("--keep", o.keep, "This run's checkpoints kept in --checkpoint-dir, the newest (0 = all; nothing else there is removed)")->capture_default_str();
  cmd->add_option("--resume", o.resume,
                  "Continue from the newest checkpoint in DIR (same options; any grid). SIGINT/SIGTERM end a run "
                  "after its " + u.substr(0, u.size() - 1) + " with a checkpoint, exit status 128+signal");
}

RunCheckpoints prepare_checkpoints(const CheckpointOptions& o, ProcessGrid& grid, const std::vector<std::string>& inputs) {
  if (o.every < 1) throw InputError("--checkpoint-every", "must be >= 1, got " + std::to_string(o.every));
  if (o.keep < 0) throw InputError("--keep", "must be >= 0 (0 keeps every checkpoint), got " + std::to_string(o.keep));
  RunCheckpoints run;
  std::string& resume = run.resume_from;
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
  if (o.dir.empty()) return run;  // nothing written: no identity needed
  // A resumed run is the run it continues: it keeps that run's identity. A checkpoint without
  // one (an older plexus), or one that cannot be read (the resume says why), gets a fresh one.
  std::string id;
  if (grid.rank() == 0) {
    if (!resume.empty()) {
      try {
        id = read_run_id_h5(resume);
      } catch (const InputError&) {
        id.clear();
      }
    }
    if (id.empty()) id = new_run_id();
  }
  run.run_id = agreed_run_id(grid, id);
  if (grid.rank() != 0) return run;
  make_checkpoint_dir(o.dir);
  io::check_output(checkpoint_path(o.dir, 0), io::OutputNeeds::Seekable, inputs);
  run.lock = std::make_unique<io::RunLock>(checkpoint_lock_path(o.dir), o.dir,
                                           "wait for it or use another --checkpoint-dir");
  // Holding the lock, no other run writes here: a checkpoint's temporary is a killed run's.
  if (run.lock->locked())
    for (const std::string& left : remove_checkpoint_temporaries(o.dir))
      std::fprintf(stderr, "plexus: removed %s, a checkpoint's temporary left by a killed run\n", left.c_str());
  // Checkpoints written without an identity are accepted where the run resumes from: an older
  // plexus's run continued in place. They are never removed by rotation.
  const bool resumed_here = !o.resume.empty() && same_directory(o.resume, o.dir);
  if (const auto foreign = find_foreign_checkpoint(o.dir, run.run_id, resumed_here)) {
    throw InputError(o.dir, "holds files named like checkpoints that are not this run's: " + foreign->path + " " +
                                foreign->why +
                                (foreign->more > 0 ? " (and " + std::to_string(foreign->more) + " more)" : "") +
                                "; use another --checkpoint-dir or remove " + (foreign->more > 0 ? "them" : "it") +
                                (foreign->another_run && o.resume.empty() ? " (--resume " + o.dir + " continues that run)" : ""));
  }
  return run;
}

void check_outputs_outside_checkpoints(const CheckpointOptions& o,
                                       const std::vector<std::pair<std::string, std::string>>& outputs) {
  if (o.dir.empty()) return;
  for (const auto& [option, path] : outputs)
    if (names_checkpoint_file(path, o.dir))
      throw InputError(path, "cannot write: " + option + " names a file of --checkpoint-dir " + o.dir +
                                 " (checkpoint-<n>.h5), which the run's checkpoints would replace or be replaced "
                                 "by; choose another name");
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
  if (root_) remove_old_checkpoints(o_.dir, o_.keep, run_id_);
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
         (!s.last().empty() ? "; checkpoint " + s.last() + " (continue with --resume " + dir + ")"
          : dir.empty()     ? std::string(" (no --checkpoint-dir: nothing saved to resume from)")
                            : " (no checkpoint written to " + dir + " yet: nothing saved to resume from)");
}

}  // namespace plexus::cli
