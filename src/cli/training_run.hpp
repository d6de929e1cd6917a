#pragma once
// What `plexus train` and `plexus gpt train` do alike around their trainer: the outputs checked
// before any work, the --metrics file (header, a line per epoch or step, summary;
// docs/metrics.md), the progress display, the checkpoint schedule and the graceful stop
// (docs/checkpoints.md), and the summary's figures every rank contributes to (resident memory,
// the largest over ranks). A command keeps its data, its trainer, its messages and its fields.
#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plexus/process_grid.hpp"
#include "plexus/profiling.hpp"
#include "src/cli/metrics_log.hpp"
#include "src/cli/progress_display.hpp"
#include "src/cli/run_control.hpp"

namespace plexus::cli {

// The files a training command writes, and those it reads (no output may be one of them).
struct TrainingFiles {
  std::string metrics;             // --metrics; "" for none
  std::string model_option, model;  // the final model's option ("--save-model") and file; "" for none
  CheckpointOptions checkpoints;
  std::vector<std::string> inputs;
  // Every rank writes the model and the checkpoints together (GCN), so every rank must reach
  // them; false: rank 0 writes them alone (GPT).
  bool written_by_every_rank = false;
};

class TrainingRun {
 public:
  // Before any work, on every rank: rank 0 refuses a metrics and a model file naming one file,
  // opens the metrics file and checks the model's; then the checkpoint options
  // (prepare_checkpoints); then, when every rank writes them, that every rank reaches the model
  // and checkpoint files rank 0 names (io::check_shared_output).
  // `unit`: what the run counts ("epoch", "step"); `profiler`: --profile's, or null.
  TrainingRun(ProcessGrid& grid, const char* unit, const TrainingFiles& files, bool quiet,
              const KernelProfiler* profiler);

  // The metrics file's first line (MetricsLog::header).
  void header(const std::string& command, const CLI::App& cmd, const nlohmann::ordered_json& run,
              const std::map<std::string, std::string>& reductions);
  const std::string& resume_from() const { return run_checkpoints_.resume_from; }  // "" without --resume
  // The identity the trainer stores in each checkpoint (set_run_id; "" without --checkpoint-dir).
  const std::string& run_id() const { return run_checkpoints_.run_id; }
  ProgressStyle style() const { return style_; }
  // Just before the data is read: the resident memory of the libraries and the runtime, the
  // largest over ranks (collective).
  void measure_base_rss();
  double base_rss() const { return base_rss_; }

  // Before the first epoch or step (`done` of `total` already done): the progress display (as
  // lines, every `line_every`-th) and the graceful stop: SIGINT/SIGTERM (Ctrl-C, a batch
  // system's pre-emption) end the run after its epoch or step, with a checkpoint; a second one
  // ends it at once.
  void start(long long done, long long total, long line_every = 1);
  // After each epoch or step: its metrics line, and `status` on the progress display.
  void step_done(const nlohmann::ordered_json& line, long long done, const std::string& status, double seconds,
                 bool force_line = false);
  // Then (the trainer's `stop`): whether a stop was asked for on any rank, alike on every rank,
  // after `save` (collective) wrote the checkpoint due after `done`.
  bool stop_after(long long done, const std::function<void(const std::string&)>& save);
  // The trainer's stop check (plexus/stop_check.hpp), asked within an epoch or step: whether a
  // stop was asked for on any rank, alike on every rank (one all-reduce; once true, true
  // without asking again). Collective.
  bool stop_agreed();
  // After the run: ends the progress display; `save_model` (collective, may be empty) writes the
  // final model, before the peak resident memory is taken (the largest over ranks); when a
  // stop ended the run, the exit status becomes 128 + the signal.
  void finish(long long done, const std::function<void()>& save_model = {});
  double peak_rss() const { return peak_rss_; }

  // Rank 0, after finish(). The line that says the run was interrupted (none when it was not).
  void print_interruption() const;
  // After the command's result: the kernel table (--profile; `comm_seconds` of the run's
  // `total_seconds`) and the metrics file's last line: {"summary", "interrupted", `done_key`,
  // "resumed_from", "checkpoint", ...`fields`, "kernels"}.
  void summary(double total_seconds, double comm_seconds, const char* done_key, long long done,
               const nlohmann::ordered_json& fields);

 private:
  ProcessGrid& grid_;
  std::string unit_;
  std::string checkpoint_dir_;  // --checkpoint-dir, for the interrupted line
  const KernelProfiler* profiler_;
  ProgressStyle style_;
  MetricsLog metrics_;
  RunCheckpoints run_checkpoints_;  // --resume's file, the run's identity, the directory's lock
  double base_rss_ = 0, peak_rss_ = 0;
  CheckpointSchedule checkpoints_;
  std::unique_ptr<Progress> progress_;
  long long total_ = 0;
  int stopped_by_ = 0;  // the agreed stop signal; 0: none
  bool stopped_within_ = false;  // agreed at a stop point within an epoch or step
  std::string interruption_;
};

}  // namespace plexus::cli
